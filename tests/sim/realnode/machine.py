"""What the real node takes from this machine, and how tear-down gives it back.

Bring-up claims the runtime's standard paths (so the collection reads them as on any node: ``gpu_host_facts``
with ``host_root=/``) and refuses when one exists - another containerd or kubelet may own it. Tear-down kills
what runs in the node's cgroups, unmounts what lies under its paths, deletes its network namespaces and
interfaces, the iptables chains the kubelet added and the cgroups it made, then the claimed paths.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

#: The standard paths of containerd, the kubelet, CDI and the NVIDIA runtime; bring-up creates each.
CLAIMED = (
    "/etc/containerd",
    "/run/containerd",
    "/var/lib/containerd",
    "/var/lib/kubelet",
    "/etc/cdi",
    "/var/run/cdi",
    "/etc/nvidia-container-runtime",
    "/usr/local/bin/containerd",
)
#: Directories other runtimes share (network namespaces, NRI's socket, runc's state): made when missing, and then
#: removed again.
SHARED = ("/run/netns", "/run/nri", "/run/runc")
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The cgroups the kubelet (cgroupfs driver) and containerd create at each hierarchy's top.
NODE_CGROUPS = ("kubepods", "kubepods.slice", "default")
NETNS_DIR = Path("/var/run/netns")
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"


class MachineError(RuntimeError):
    """This machine cannot host the real node; the message names what is in the way."""


def check_free() -> None:
    """Raise MachineError unless we are root and every claimed path is free."""
    if os.geteuid() != 0:
        raise MachineError("a real node needs root (it runs containerd, runc and the kubelet)")
    taken = [p for p in CLAIMED if os.path.lexists(p)]
    if taken:
        raise MachineError(
            "the real node needs these paths and they exist (another containerd or kubelet, or a real node "
            "that was not torn down; `python -m tests.sim down` removes ours): " + ", ".join(taken)
        )


def snapshot() -> dict:
    """What tear-down compares against: interfaces, network namespaces, iptables chains, top cgroups."""
    return {
        "links": sorted(_links()),
        "netns": sorted(p.name for p in NETNS_DIR.glob("*")) if NETNS_DIR.is_dir() else [],
        "chains": {t: sorted(_chains(t)) for t in ("filter", "nat", "mangle")},
        "cgroups": sorted(str(p) for p in _node_cgroups()),
        "shared": [p for p in SHARED if os.path.exists(p)],
    }


def _sh(*argv: str) -> subprocess.CompletedProcess:
    """Run a machine command whose failure the caller judges (or, tearing down, tolerates)."""
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _links() -> set[str]:
    out = _sh("ip", "-o", "link", "show").stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def _chains(table: str) -> set[str]:
    if not shutil.which("iptables-save"):
        return set()
    out = _sh("iptables-save", "-t", table).stdout
    return {line[1:].split()[0] for line in out.splitlines() if line.startswith(":")}


def _node_cgroups() -> list[Path]:
    return [h / name for h in CGROUP_ROOT.iterdir() if h.is_dir() for name in NODE_CGROUPS if (h / name).is_dir()]


def give_back(before: dict, log) -> list[str]:
    """Undo the real node: return what could not be removed (empty when the machine is as it was)."""
    _kill_cgroup_processes(before, log)
    _unmount_under([p for p in CLAIMED if not p.startswith("/usr")] + [str(NETNS_DIR)])
    for name in sorted(set(os.listdir(NETNS_DIR)) - set(before["netns"])) if NETNS_DIR.is_dir() else []:
        _sh("ip", "netns", "delete", name)
    for link in sorted(_links() - set(before["links"])):
        _sh("ip", "link", "delete", link)
    for table, chains in before["chains"].items():
        _drop_chains(table, _chains(table) - set(chains))
    left = _remove_cgroups(before)
    for path in [p for p in SHARED if p not in before.get("shared", SHARED)] + list(CLAIMED):
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            if os.path.exists(path):
                left.append(path)
    left += [f"interface {n}" for n in sorted(_links() - set(before["links"]))]
    return left


def kill_shims() -> None:
    """SIGKILL the containerd shims that serve the claimed socket (ours: bring-up refuses when it exists)."""
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"containerd-shim" in argv[0] and CONTAINERD_SOCKET.encode() in argv:
                os.kill(pid, signal.SIGKILL)


def _kill_cgroup_processes(before: dict, log) -> None:
    """SIGKILL every process left in the node's cgroups (containers whose shim is gone), then wait for them."""
    new = [p for p in _node_cgroups() if str(p) not in before["cgroups"]]
    pids = set()
    for top in new:
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids |= {int(x) for x in procs.read_text().split()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if pids:
        log(f"real node: killed {len(pids)} container process(es) left in its cgroups")
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if Path(f"/proc/{p}").exists()}
        time.sleep(0.1)


def _unmount_under(prefixes: list[str]) -> None:
    """Unmount every mount below ``prefixes``, deepest first (lazily when busy)."""
    prefixes = [os.path.realpath(p) for p in prefixes]
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == p or point.startswith(p.rstrip("/") + "/") for p in prefixes):
            mounts.append(point)
    for point in sorted(set(mounts), key=len, reverse=True):
        if _sh("umount", point).returncode != 0:
            _sh("umount", "-l", point)


def _drop_chains(table: str, chains: set[str]) -> None:
    """Delete the rules that jump to ``chains``, then flush and delete the chains."""
    if not chains:
        return
    rules = _sh("iptables-save", "-t", table).stdout.splitlines()
    for rule in rules:
        parts = rule.split()
        if parts[:1] == ["-A"] and "-j" in parts and parts[parts.index("-j") + 1] in chains:
            _sh("iptables", "-t", table, "-D", *parts[1:])
    for chain in chains:
        _sh("iptables", "-t", table, "-F", chain)
    for chain in chains:
        _sh("iptables", "-t", table, "-X", chain)


def _remove_cgroups(before: dict) -> list[str]:
    left = []
    for top in _node_cgroups():
        if str(top) in before["cgroups"]:
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        try:
            top.rmdir()
        except OSError as exc:
            left.append(f"cgroup {top} ({exc.strerror})")
    return left
