"""Container images for the real node, built here (no registry is reachable) and imported with containerd's own
``ctr images import``: an OCI image layout of one layer, written by ``oci_archive``.

Each image stands in under the name the cluster asks for, so the kubelet finds it present and pulls nothing:
the pod sandbox (``registry.k8s.io/pause``), the smoke test's CUDA sample (``gpu_probe.c``: it reports the
devices and NVML it received) and NVIDIA's device plugin (the real binary, built by tests/sim/build/build.sh).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"
#: containerd 2.4's pinned sandbox image (``containerd config default``).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
#: gpu_smoke_test's default (vectoradd) image.
SMOKE_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
#: gpu_smoke_test's nvidia-smi image: a base with only the C library; nvidia-smi comes from the driver root (CDI).
CUDA_BASE_IMAGE = "nvcr.io/nvidia/cuda:12.5.0-base-ubuntu22.04"
#: NVIDIA's device plugin as tests/sim/build/build.sh builds it; the bed's inventory sets the chart's
#: ``devicePlugin.version`` to this tag (the operator deploys nvcr.io/nvidia/k8s-device-plugin:<version>).
DEVICE_PLUGIN_VERSION = "v0.17.4"
DEVICE_PLUGIN_IMAGE = f"nvcr.io/nvidia/k8s-device-plugin:{DEVICE_PLUGIN_VERSION}"


@dataclass(frozen=True)
class Image:
    name: str
    entrypoint: list
    files: dict  # path in the image -> path on this machine


def compile_c(source: Path, out: Path, static: bool = False) -> Path:
    """``cc`` one of our C programs (C_DIR) into ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = ["cc", "-O2", "-Wall", *(["-static"] if static else []), "-o", str(out), str(source)]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return out


def shared_libraries(binary: str) -> dict:
    """{path: path} of the libraries ``binary`` loads (ldd), the dynamic loader included."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0] if parts and parts[0].startswith("/") else ""
        if path.startswith("/"):
            libs[path] = os.path.realpath(path)
    return libs


def node_images(build_dir: Path, bins: dict) -> list[Image]:
    """The images the real node needs, their programs compiled or found under ``bins`` (name -> path)."""
    pause = compile_c(C_DIR / "pause.c", build_dir / "pause", static=True)
    probe = compile_c(C_DIR / "gpu_probe.c", build_dir / "gpu-probe")
    plugin = bins["nvidia-device-plugin"]
    return [
        Image(PAUSE_IMAGE, ["/pause"], {"/pause": str(pause)}),
        Image(
            SMOKE_IMAGE,
            ["/usr/local/bin/gpu-probe"],
            {"/usr/local/bin/gpu-probe": str(probe), **shared_libraries(str(probe))},
        ),
        Image(CUDA_BASE_IMAGE, ["/bin/false"], shared_libraries(str(probe))),
        Image(
            DEVICE_PLUGIN_IMAGE,
            ["/usr/bin/nvidia-device-plugin"],
            {"/usr/bin/nvidia-device-plugin": plugin, **shared_libraries(plugin)},
        ),
    ]


def _layer(files: dict) -> bytes:
    """An uncompressed tar of ``files`` (image path -> host path), owned by root, with its parent directories."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(p) for path in files for p in Path(path.lstrip("/")).parents if str(p) != "."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, src in sorted(files.items()):
            data = Path(src).read_bytes()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def oci_archive(image: Image, out: Path) -> Path:
    """Write ``image`` as an OCI image layout tar (what ``ctr images import`` reads) to ``out``."""
    blobs = {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer = _layer(image.files)
    layer_desc = blob(layer, "application/vnd.oci.image.layer.v1.tar")
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": image.entrypoint, "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": blob(json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json"),
        "layers": [layer_desc],
    }
    manifest_desc = blob(json.dumps(manifest).encode(), manifest["mediaType"])
    manifest_desc["annotations"] = {
        "io.containerd.image.name": image.name,
        "org.opencontainers.image.ref.name": image.name,
    }
    index = {"schemaVersion": 2, "manifests": [manifest_desc]}
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w") as tar:
        entries = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": json.dumps(index).encode()}
        entries.update({f"blobs/sha256/{d.split(':', 1)[1]}": data for d, data in blobs.items()})
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def import_images(ctr: str, address: str, images: list[Image], work: Path) -> None:
    """Import ``images`` into containerd's ``k8s.io`` namespace (the CRI's), unpacked for its snapshotter."""
    for image in images:
        archive = oci_archive(image, work / (image.name.replace("/", "_").replace(":", "_") + ".tar"))
        subprocess.run(
            [ctr, "--address", address, "-n", "k8s.io", "images", "import", "--local", str(archive)],
            check=True,
            capture_output=True,
            text=True,
        )
        archive.unlink()
    shutil.rmtree(work, ignore_errors=True)
