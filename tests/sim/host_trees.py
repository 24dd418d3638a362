"""A simulated GPU host loads the driver its NVML profile reports.

The host trees under tests/sim/hosts/ are shared by pools whose NVML profiles report different drivers (550, 570,
580, 535). A real host's kernel module, NVML and user-space library agree (otherwise NVML fails with "Driver/library
version mismatch"), so a bed's host is the tree with its loaded kernel module (/proc/driver/nvidia/version) set to
the NVML profile's driver: a copy of the tree, made once per (tree content, driver) in the cache and otherwise
byte-identical. A host whose module and NVML disagree on purpose is the fixture tree itself with another profile
(tests/integration/baseline).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import yaml

SIM_DIR = Path(__file__).resolve().parent
HOSTS_DIR = SIM_DIR / "hosts"
NVML_DIR = SIM_DIR / "nvml" / "profiles"
MODULE_VERSION_FILE = Path("proc/driver/nvidia/version")
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Sep 24 ..." (the open flavour says "Open Kernel
# Module for x86_64"): the version is the first word on the NVRM line that is a dotted number.
_NVRM_VERSION = re.compile(r"^(NVRM version:.*?\s)(\d+\.\d+(?:\.\d+)?)(?=\s)", re.M)


def nvml_driver(profile: str) -> str | None:
    """The driver version an NVML profile reports."""
    data = yaml.safe_load((NVML_DIR / f"{profile}.yml").read_text()) or {}
    version = data.get("driver_version")
    return str(version) if version else None


def module_version(tree: Path) -> str | None:
    """The loaded kernel module's version in a host tree, or None when the tree loads none."""
    try:
        match = _NVRM_VERSION.search((tree / MODULE_VERSION_FILE).read_text())
    except OSError:
        return None
    return match.group(2) if match else None


def _content_key(tree: Path) -> str:
    """A short digest of a tree's paths, link targets and file contents (a changed fixture gets a new copy)."""
    digest = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        digest.update(str(path.relative_to(tree)).encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def host_root(tree: str, nvml_profile: str | None, cache: Path) -> Path:
    """The host root of a simulated host: the fixture tree itself when its kernel module is already the NVML
    profile's driver or it loads none, else the cached copy that loads that driver."""
    source = HOSTS_DIR / tree
    want = nvml_driver(nvml_profile) if nvml_profile else None
    have = module_version(source)
    if not want or not have or want == have:
        return source
    dest = cache / "hosts" / f"{tree}-{_content_key(source)}@{want}"
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{tree}-", dir=dest.parent))
    try:
        copy = scratch / "root"
        shutil.copytree(source, copy, symlinks=True)
        version_file = copy / MODULE_VERSION_FILE
        version_file.write_text(_NVRM_VERSION.sub(lambda m: m.group(1) + want, version_file.read_text(), count=1))
        try:
            copy.rename(dest)
        except OSError:  # another process made the same copy first: theirs is identical
            if not dest.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest
