"""The demo audit's inputs (`make audit`): the test bed's demo inventory plus tests/integration/audit/demo-faults.yml.

Runs playbooks/audit.yml on the real fact modules for the demo profile's hosts with a cluster that cannot be read
(a kubeconfig that does not exist): the cluster is recorded as `error`, and the hosts, the degraded GPUs of the
overlay and its unreachable host are all still reported. The same run against the running demo cluster is what
`make audit` does after `make site`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[3]
OVERLAY = ROOT / "tests" / "integration" / "audit" / "demo-faults.yml"
SCHEMA = json.loads((ROOT / "docs" / "audit-snapshot.schema.json").read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)
    d = tmp_path_factory.mktemp("demo-audit")
    inv = subprocess.run(
        [sys.executable, "-m", "tests.sim", "inventory", "--profile", "demo", "--state-dir", str(d / "no-bed")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    (d / "inventory.yml").write_text(inv.stdout)
    colls = d / "collections" / "ansible_collections" / "gpuops"
    colls.mkdir(parents=True)
    (colls / "gpu_operator").symlink_to(ROOT)
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(d / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="0",
        ANSIBLE_TIMEOUT="10",
        ANSIBLE_LOCAL_TEMP=str(d / "tmp"),
    )
    for key in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG", "LD_LIBRARY_PATH"):
        env.pop(key, None)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(d / "inventory.yml"),
            "-i",
            str(OVERLAY),
            str(ROOT / "playbooks" / "audit.yml"),
            "-e",
            f"gpu_nvml_library={ROOT / 'build' / 'nvml' / 'libnvidia-ml.so.1'}",
            "-e",
            f"gpu_audit_report_dir={d / 'reports'}",
            "-e",
            f"gpu_audit_kubeconfig={d / 'no-such-kubeconfig'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    return d, json.loads((d / "reports" / "gpu-audit.json").read_text()), proc


def test_the_three_reports_are_written_even_when_the_cluster_does_not_answer(run):
    d, snap, _proc = run
    assert sorted(p.name for p in (d / "reports").iterdir()) == ["gpu-audit.html", "gpu-audit.json", "gpu-audit.md"]
    jsonschema.validate(snap, SCHEMA)
    (cluster,) = snap["clusters"]
    assert cluster["status"] == "error" and "no-such-kubeconfig" in cluster["error"]


def test_the_overlay_adds_the_unreachable_host_and_the_degraded_gpus(run):
    _d, snap, proc = run
    rows = {r["host"]: r for r in snap["fleet"]}
    assert sorted(rows) == ["a100-0", "a100-1", "h100-0", "h100-1", "h100-2", "h100-3", "h100-offline"]
    assert rows["h100-offline"]["status"] == "unreachable"
    assert all(r["status"] == "ok" for h, r in rows.items() if h != "h100-offline")
    critical = {h: sorted(g["index"] for g in r["gpus"] if g["health"] == "critical") for h, r in rows.items()}
    assert (critical["h100-0"], critical["h100-1"], critical["h100-2"], critical["h100-3"]) == ([], [2, 5, 6], [4], [1])
    (h100,) = [p for p in snap["pools"] if p["pool"] == "h100"]
    assert {d["field"] for d in h100["drift"]} == {"driver", "cuda", "vbios"}  # h100-3 runs the aged profile
    assert "Unreachable: h100-offline" in proc.stdout
