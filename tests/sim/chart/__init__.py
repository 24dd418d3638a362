"""Stand-in `gpu-operator` Helm chart for the test bed, in four versions (v25.10.1, v26.3.3, v26.7.0, v26.7.1;
v26.7.0 adds the GPUCluster CRD and CR and the draDriver values, for DRA through the operator, and the render-time
checks of templates/validations.yaml, one of them on `.Capabilities`).

Project-written from shared/reference/gpu-operator.md; never NVIDIA's chart. Sources:
- gpu-operator/<version>/Chart.yaml and values.yaml: per-version metadata, value keys and defaults;
- gpu-operator/_common/templates/: templates shared by every version (version-specific bits are gated on
  values or .Chart.Version);
- crds.py: the ClusterPolicy/NVIDIADriver (from v26.7.0 also GPUCluster) CRD schemas, per version (fields are
  added between versions), the 26.7 line's ComputeDomain CRDs and the NFD subchart's CRDs;
- node-feature-discovery/: the NFD subchart (values, values.schema.json, templates), assembled into charts/ with
  the version the parent's Chart.yaml declares for it (condition nfd.enabled), as the real chart ships it.

`assemble(version, dest)` writes a complete chart directory; `build_repo(out_dir)` packages every version
and writes index.yaml there (the test bed serves it over HTTP on loopback).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from . import crds

CHART_SRC = Path(__file__).resolve().parent / "gpu-operator"
NFD_SRC = Path(__file__).resolve().parent / "node-feature-discovery"
NFD = "node-feature-discovery"
VERSIONS = crds.VERSIONS
LATEST = VERSIONS[-1]


def helm_binary() -> str:
    cache = Path(
        os.environ.get("GPUOPS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuops"
    ).expanduser()
    bin_dir = Path(os.environ.get("GPUOPS_BIN") or cache / "bin").expanduser()
    cand = bin_dir / "helm"
    if cand.exists():
        return str(cand)
    found = shutil.which("helm")
    if not found:
        raise RuntimeError(f"helm not found ({cand} or PATH); build it with `make sim-binaries`")
    return found


def assemble(version: str, dest: Path | str) -> Path:
    """Write the complete chart for `version` into dest/gpu-operator and return that path."""
    if version not in VERSIONS:
        raise ValueError(f"unknown stand-in chart version {version!r} (have: {', '.join(VERSIONS)})")
    out = Path(dest) / "gpu-operator"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(CHART_SRC / "_common", out)
    for f in ("Chart.yaml", "values.yaml"):
        shutil.copy2(CHART_SRC / version / f, out / f)
    (out / "crds").mkdir()
    for name, doc in crds.all_crds(version).items():
        (out / "crds" / name).write_text(
            "# Project-written stand-in CRD (tests/sim/chart/crds.py); not NVIDIA's file.\n"
            + yaml.safe_dump(doc, sort_keys=False)
        )
    nfd_version = nfd_chart_version(version)
    sub = out / "charts" / NFD
    shutil.copytree(NFD_SRC, sub)
    meta = {
        "apiVersion": "v2",
        "name": NFD,
        "description": "Project-written stand-in for the node-feature-discovery chart (a gpu-operator subchart).",
        "type": "application",
        "version": nfd_version,
        "appVersion": "v" + nfd_version.lstrip("v"),
    }
    (sub / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    (sub / "crds").mkdir()
    (sub / "crds" / "nfd-api-crds.yaml").write_text(
        "# Project-written stand-in NFD CRDs (tests/sim/chart/crds.py); not the NFD project's file.\n"
        + yaml.safe_dump_all(nfd_crd_documents(version), sort_keys=False)
    )
    return out


def nfd_chart_version(version: str) -> str:
    """The node-feature-discovery subchart version chart `version` declares in its Chart.yaml dependencies."""
    meta = yaml.safe_load((CHART_SRC / version / "Chart.yaml").read_text())
    deps = [d for d in meta.get("dependencies") or [] if d.get("name") == NFD]
    if not deps:
        raise ValueError(f"gpu-operator/{version}/Chart.yaml declares no {NFD} dependency (condition nfd.enabled)")
    return str(deps[0]["version"])


def crd_documents(version: str) -> list[dict]:
    """The CRD objects that chart `version` ships in its own crds/ (for tests that apply CRDs before an upgrade)."""
    return list(crds.all_crds(version).values())


def nfd_crd_documents(version: str) -> list[dict]:
    """The CRD objects of chart `version`'s NFD subchart (installed only with nfd.enabled)."""
    return crds.nfd_crds(nfd_chart_version(version))


def build_repo(out_dir: str | os.PathLike) -> None:
    """Package every stand-in version into out_dir and (re)write out_dir/index.yaml."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    helm = helm_binary()
    with tempfile.TemporaryDirectory(prefix="gpuops-chart-") as tmp:
        for v in VERSIONS:
            src = assemble(v, Path(tmp) / v)
            subprocess.run(
                [helm, "package", str(src), "-d", str(out)],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
    index = out / "index.yaml"
    argv = [helm, "repo", "index", str(out)]
    if index.exists():
        argv += ["--merge", str(index)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


__all__ = ["VERSIONS", "LATEST", "assemble", "build_repo", "crd_documents", "nfd_crd_documents"]
