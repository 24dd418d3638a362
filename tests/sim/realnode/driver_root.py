"""A minimal NVIDIA driver root over the fake NVML, for ``nvidia-ctk cdi generate`` and the containers it feeds.

NVIDIA's driver container (or a host install) leaves the driver's libraries under their versioned names and the
GPUs' device files. Here the "driver" is tests/sim/nvml's fake libnvidia-ml.so.1, compiled for the node with its
fixture inside (read when ``GPUOPS_FAKE_NVML_FIXTURE`` is unset), so a container that has only the library - the
device plugin's, the smoke pod's - sees the node's GPUs. ``nvidia-ctk`` reads the driver version from NVML, finds
the libraries ending in that version and the device files, and writes the CDI spec.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import yaml

LIB_DIR = Path("usr/lib/x86_64-linux-gnu")
FAKE_NVML_SOURCE = Path(__file__).resolve().parents[1] / "nvml" / "fake_nvml.c"
NVIDIA_MAJOR = 195  # /dev/nvidia<N> (minor N), /dev/nvidia-modeset (254), /dev/nvidiactl (255)
MODESET_MINOR = 254
CTL_MINOR = 255
# nvidia-uvm gets a dynamic major from the kernel; these are the ranges Linux hands out (highest first).
DYNAMIC_CHAR_MAJORS = (*range(254, 233, -1), *range(511, 383, -1))
# Hooks the spec leaves out: none. Every hook nvidia-ctk 1.20 writes works in a container whose image has no
# ldconfig: update-ldcache runs the host's /sbin/ldconfig (copied into memory) inside the container's root, and
# create-symlinks only makes links. update-ldcache does need an /etc in the container's root; a pod has one, as
# the CRI bind-mounts /etc/hosts, /etc/hostname and /etc/resolv.conf (a bare runc rootfs without /etc fails).
DISABLED_HOOKS: tuple[str, ...] = ()


def read_fixture(fixture: Path) -> dict:
    """A fake NVML fixture as a dict, its ``include:`` read as the fake reads it (the including file's keys win)."""
    data = yaml.safe_load(fixture.read_text()) or {}
    include = data.pop("include", None)
    if include:
        base = read_fixture(fixture.parent / str(include))
        base.update(data)
        data = base
    return data


def gpu_minors(data: dict) -> list[int]:
    """The minor number of each GPU's /dev/nvidia<N>: ``gpu.<i>.minor_number``, else ``gpu.*.minor_number``, else
    the index (as the fake's nvmlDeviceGetMinorNumber answers)."""
    minors = []
    for index in range(int(data.get("gpu_count") or 0)):
        value = data.get(f"gpu.{index}.minor_number", data.get("gpu.*.minor_number", index))
        minors.append(int(value))
    return minors


def free_char_major(proc_devices: Path = Path("/proc/devices")) -> int:
    """A character major no driver on this machine holds, from the kernel's dynamic ranges (for nvidia-uvm)."""
    used = set()
    in_char = False
    for line in proc_devices.read_text().splitlines():
        if line.startswith("Character devices"):
            in_char = True
        elif line.startswith("Block devices"):
            in_char = False
        elif in_char and line.split():
            used.add(int(line.split()[0]))
    for major in DYNAMIC_CHAR_MAJORS:
        if major not in used:
            return major
    raise RuntimeError(f"no free character major in {proc_devices}")


def _char_device(path: Path, major: int, minor: int) -> None:
    """A character device file (mode 0666, as the NVIDIA driver creates its device files)."""
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    os.chmod(path, 0o666)


def fixture_text(fixture: Path, depth: int = 0) -> str:
    """The fixture's lines with its ``include:`` chain appended (the fake reads the first match of a key, so the
    including file's keys still win)."""
    lines, include = [], None
    for line in fixture.read_text().splitlines():
        if line.strip().startswith("include:"):
            include = line.split(":", 1)[1].strip().strip("\"'")
        else:
            lines.append(line)
    text = "\n".join(lines) + "\n"
    if include and depth < 4:
        text += fixture_text(fixture.parent / include, depth + 1)
    return text


def compile_node_library(fixture: Path, source: Path, out: Path) -> Path:
    """The fake libnvidia-ml with ``fixture`` built in (``gpuops_embedded_fixture``), soname libnvidia-ml.so.1."""
    embedded = out.parent / "gpuops-embedded-fixture.c"
    embedded.write_text(f"const char gpuops_embedded_fixture[] = {json.dumps(fixture_text(fixture))};\n")
    argv = ["cc", "-O2", "-fPIC", "-pthread", "-shared", "-Wl,-soname,libnvidia-ml.so.1", "-o", str(out)]
    subprocess.run([*argv, str(source), str(embedded)], check=True, capture_output=True, text=True)
    embedded.unlink()
    out.chmod(0o755)
    return out


def build_driver_root(root: Path, fixture: Path, nvml_source: Path = FAKE_NVML_SOURCE) -> Path:
    """Lay out a driver root under ``root`` for the GPUs of ``fixture`` and return ``root``.

    - usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driver_version>: the fake (``nvml_source``) compiled with the
      fixture inside, with the ``libnvidia-ml.so.1`` symlink; nvidia-ctk mounts every ``*.so.<driver_version>``
      it finds there. No libcuda: nvidia-ctk falls back to libnvidia-ml for the library directory, and nothing
      here runs CUDA.
    - etc/ld.so.conf and etc/ld.so.cache (built by the host's ldconfig -r), which nvidia-ctk searches first.
    - dev/nvidia<minor> per GPU, dev/nvidiactl and dev/nvidia-modeset (major 195), dev/nvidia-uvm and
      dev/nvidia-uvm-tools (minors 0 and 1 of a major free on this machine): character devices, made with mknod
      (needs root). Nothing backs them; nvidia-ctk only reads their numbers.
    """
    data = read_fixture(fixture)
    version = str(data.get("driver_version") or "")
    if not version or version == "unsupported":
        raise ValueError(f"{fixture}: no driver_version")
    lib_dir = root / LIB_DIR
    dev_dir = root / "dev"
    lib_dir.mkdir(parents=True, exist_ok=True)
    dev_dir.mkdir(parents=True, exist_ok=True)

    versioned = lib_dir / f"libnvidia-ml.so.{version}"
    compile_node_library(fixture, nvml_source, versioned)
    soname = lib_dir / "libnvidia-ml.so.1"
    if soname.exists() or soname.is_symlink():
        soname.unlink()
    soname.symlink_to(versioned.name)

    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "ld.so.conf").write_text(f"/{LIB_DIR}\n")
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    subprocess.run([ldconfig, "-r", str(root)], check=True)

    for minor in gpu_minors(data):
        _char_device(dev_dir / f"nvidia{minor}", NVIDIA_MAJOR, minor)
    _char_device(dev_dir / "nvidiactl", NVIDIA_MAJOR, CTL_MINOR)
    _char_device(dev_dir / "nvidia-modeset", NVIDIA_MAJOR, MODESET_MINOR)
    uvm_major = free_char_major()
    _char_device(dev_dir / "nvidia-uvm", uvm_major, 0)
    _char_device(dev_dir / "nvidia-uvm-tools", uvm_major, 1)
    return root


def cdi_generate_argv(
    nvidia_ctk: str,
    driver_root: Path,
    output: Path,
    hook_path: str | None = None,
    disabled_hooks: tuple[str, ...] = DISABLED_HOOKS,
) -> list[str]:
    """The ``nvidia-ctk cdi generate`` command line that writes ``output`` (YAML): one device per GPU by index
    and by UUID, plus ``all``, found through NVML in nvml mode (run it with ``GPUOPS_FAKE_NVML_FIXTURE`` set).

    Host paths in the spec are under ``driver_root`` (libraries and /dev alike); ``hook_path`` is the
    nvidia-cdi-hook the runtime runs (default: /usr/bin/nvidia-cdi-hook). nvsandboxutils is off: the fake driver
    has no libnvidia-sandboxutils, and without it nvidia-ctk asks NVML instead.
    """
    argv = [
        nvidia_ctk,
        "cdi",
        "generate",
        "--mode=nvml",
        f"--driver-root={driver_root}",
        f"--dev-root={driver_root}",
        "--device-name-strategy=index",
        "--device-name-strategy=uuid",
        "--feature-flag=disable-nvsandboxutils",
        "--format=yaml",
        f"--output={output}",
    ]
    if hook_path:
        argv.append(f"--nvidia-cdi-hook-path={hook_path}")
    argv += [f"--disable-hook={hook}" for hook in disabled_hooks]
    return argv
