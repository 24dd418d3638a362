"""The real node's container runtime as a GPU node's is set up: containerd's own config, the NVIDIA runtime added
by ``nvidia-ctk runtime configure`` (a drop-in, set as default, CDI on), the NVIDIA runtime's config written by
``nvidia-ctk config``, the CDI spec by ``nvidia-ctk cdi generate``, and a CNI bridge on a private pod range.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.sim.realnode import driver_root, machine

CONTAINERD_CONFIG = Path("/etc/containerd/config.toml")
CONTAINERD_DROP_IN = Path("/etc/containerd/conf.d/99-nvidia.toml")
CONTAINERD_SOCKET = machine.CONTAINERD_SOCKET
NVIDIA_RUNTIME_CONFIG = Path("/etc/nvidia-container-runtime/config.toml")
CDI_SPEC = Path("/var/run/cdi/nvidia.yaml")
CNI_PLUGINS = "/usr/lib/cni"  # Debian's containernetworking-plugins (the Makefile installs it)
#: The pod range of the real node's bridge: private, unlikely to meet a real network. The bridge's own address
#: (the pods' gateway) is the node's InternalIP: the kubelet refuses a loopback node IP.
POD_SUBNET = "10.244.250.0/24"
NODE_IP = "10.244.250.1"
BRIDGE = "gpuops0"


CAP_SYS_RESOURCE = 24


def has_capability(bit: int) -> bool:
    """Whether this process holds capability ``bit`` (its effective set, /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def _run(argv: list[str], env: dict | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def containerd_config(bins: dict, cni_conf_dir: Path) -> None:
    """containerd's root config (version 3, as an administrator writes it): runc by path, cgroupfs, our CNI."""
    restrict_oom = not has_capability(CAP_SYS_RESOURCE)
    CONTAINERD_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    CONTAINERD_CONFIG.write_text(
        f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "{CONTAINERD_SOCKET}"

[plugins."io.containerd.cri.v1.runtime"]
  # this machine's root lacks CAP_SYS_RESOURCE (on many CI VMs): no container may lower its OOM score below ours
  restrict_oom_score_adj = {"true" if restrict_oom else "false"}

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["{CNI_PLUGINS}"]
  conf_dir = "{cni_conf_dir}"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "{bins["runc"]}"
  SystemdCgroup = false
"""
    )


def configure_nvidia_runtime(bins: dict) -> None:
    """What the toolkit does on a node: ``nvidia-ctk runtime configure`` writes containerd's NVIDIA drop-in (the
    ``nvidia`` runtime, the default, CDI enabled) and imports it from the root config; the NVIDIA runtime's own
    config runs in CDI mode over our runc."""
    _run(
        [
            bins["nvidia-ctk"],
            "runtime",
            "configure",
            "--runtime=containerd",
            f"--config={CONTAINERD_CONFIG}",
            f"--drop-in-config={CONTAINERD_DROP_IN}",
            f"--nvidia-runtime-path={bins['nvidia-container-runtime']}",
            "--set-as-default",
            "--enable-cdi",
        ]
    )
    NVIDIA_RUNTIME_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    _run([bins["nvidia-ctk"], "config", "default", f"--output={NVIDIA_RUNTIME_CONFIG}"])
    _run(
        [
            bins["nvidia-ctk"],
            "config",
            f"--config-file={NVIDIA_RUNTIME_CONFIG}",
            "--in-place",
            "--set=nvidia-container-runtime.mode=cdi",
            f"--set=nvidia-container-runtime.runtimes={bins['runc']}",
            f"--set=nvidia-ctk.path={bins['nvidia-ctk']}",
        ]
    )


def remove_nvidia_runtime() -> str:
    """Take the NVIDIA runtime out of containerd's config (the drop-in), as an uninstalled toolkit leaves it;
    returns the drop-in's text so it can be put back."""
    text = CONTAINERD_DROP_IN.read_text()
    CONTAINERD_DROP_IN.unlink()
    return text


def node_bridge() -> None:
    """The CNI bridge, made before the first pod so that the node's address exists when the kubelet starts."""
    for argv in (
        ["ip", "link", "add", BRIDGE, "type", "bridge"],
        ["ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE],
        ["ip", "link", "set", BRIDGE, "up"],
    ):
        _run(argv)


def cni_config(conf_dir: Path, ipam_dir: Path) -> None:
    """A bridge network on POD_SUBNET (no masquerade, no port maps: nothing touches the machine's NAT)."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    conflist = {
        "cniVersion": "1.0.0",
        "name": "gpuops-real-node",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "dataDir": str(ipam_dir),
                },
            },
            {"type": "loopback"},
        ],
    }
    (conf_dir / "10-gpuops.conflist").write_text(json.dumps(conflist, indent=2))


def generate_cdi(bins: dict, root: Path, fixture: Path) -> None:
    """``nvidia-ctk cdi generate`` over the driver root ``root``, as the toolkit does at start: CDI_SPEC."""
    CDI_SPEC.parent.mkdir(parents=True, exist_ok=True)
    argv = driver_root.cdi_generate_argv(bins["nvidia-ctk"], root, CDI_SPEC, hook_path=bins["nvidia-cdi-hook"])
    _run(argv, env={"GPUOPS_FAKE_NVML_FIXTURE": str(fixture)})


def containerd_env(bins: dict) -> dict:
    """containerd's environment: its shim and runc found first on PATH."""
    bindir = str(Path(bins["containerd-shim-runc-v2"]).parent)
    return {"PATH": f"{bindir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
