"""Bring-up and tear-down of the real node: this machine joins the test bed as one Kubernetes node.

Real: kubelet, containerd, runc, the CNI bridge, NVIDIA's container toolkit (``nvidia-ctk``, the NVIDIA runtime,
its CDI hook) and device plugin. Faked: NVML (tests/sim/nvml: its driver root, library and device files), and
the images, which are built here (images.py). docs/testbed.md, "The real node", says which versions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.sim import testbed
from tests.sim.operator import dra_devices
from tests.sim.realnode import driver_root, images, kubelet, machine, runtime

BINARIES = (
    "kubelet",
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "runc",
    "nvidia-ctk",
    "nvidia-container-runtime",
    "nvidia-cdi-hook",
    "nvidia-device-plugin",
)


def _binaries() -> dict:
    """name -> the cache's plain-named link (what argv[0] then says); TestbedError naming one not built."""
    for name in BINARIES:
        testbed.binary(name)
    return {name: str(testbed.BIN_DIR / name) for name in BINARIES}


def node_dir(state: testbed.State) -> Path:
    return state.dir / "real-node"


def up(state: testbed.State, spec, api_client) -> None:
    """Join this machine as node ``spec.name`` (a profiles.RealNode) and wait until it is Ready."""
    try:
        machine.check_free()
    except machine.MachineError as exc:
        raise testbed.TestbedError(str(exc)) from None
    bins = _binaries()
    d = node_dir(state)
    d.mkdir(parents=True, exist_ok=True)
    state.data["real_node"] = {
        "name": spec.name,
        "nvml_profile": spec.nvml_profile,
        "before": machine.snapshot(),
        "dir": str(d),
    }
    state.save()
    fixture = testbed.SIM_DIR / "nvml" / "profiles" / f"{spec.nvml_profile}.yml"

    testbed.log(f"real node {spec.name}: driver root, containerd, NVIDIA runtime and CDI spec")
    os.symlink(bins["containerd"], "/usr/local/bin/containerd")
    root = driver_root.build_driver_root(d / "driver", fixture)
    runtime.containerd_config(bins, d / "cni")
    runtime.configure_nvidia_runtime(bins)
    runtime.cni_config(d / "cni", d / "cni-ipam")
    runtime.node_bridge()
    runtime.generate_cdi(bins, root, fixture)
    _start_containerd(state, bins)
    testbed.log(f"real node {spec.name}: images (pause, CUDA sample stand-in, device plugin)")
    images.import_images(
        bins["ctr"], runtime.CONTAINERD_SOCKET, images.node_images(d / "image-build", bins), d / "image-work"
    )

    testbed.log(f"real node {spec.name}: kubelet")
    pki_dir = state.dir / "pki"
    kubeconfig = kubelet.identity(pki_dir, spec.name, state.data["apiserver_url"], d / "kubelet.kubeconfig")
    port = testbed.free_ports(1)[0]
    cfg = kubelet.config(str(pki_dir / "ca.crt"), runtime.NODE_IP, port, d / "pod-logs", _cgroup_v1())
    files = {"config": kubelet.write_config(d / "kubelet.yaml", cfg), "kubeconfig": kubeconfig, "cert_dir": d / "pki"}
    labels = kubelet.registration_labels(spec.labels)
    testbed._spawn(
        state, "kubelet", kubelet.argv(bins["kubelet"], spec.name, runtime.NODE_IP, files, labels), bins["kubelet"]
    )
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    testbed._wait(f"node {spec.name} Ready", state, "kubelet", lambda: _ready(core, spec.name), 120, interval=1)
    core.patch_node(spec.name, {"metadata": {"annotations": gpu_annotations(spec.nvml_profile)}})


def _start_containerd(state: testbed.State, bins: dict) -> None:
    testbed._spawn(
        state,
        "containerd",
        [bins["containerd"], f"--config={runtime.CONTAINERD_CONFIG}"],
        marker=bins["containerd"],
        env=runtime.containerd_env(bins),
    )
    testbed._wait("containerd's CRI", state, "containerd", lambda: _cri_serving(bins["ctr"]), 30)


def _cri_serving(ctr: str) -> bool:
    return subprocess.run([ctr, "-n", "k8s.io", "version"], capture_output=True, check=False).returncode == 0


def restart_containerd(state_dir: Path) -> None:
    """Stop the real node's containerd and start it again (it reads its config anew; running containers stay)."""
    state = testbed.State(Path(state_dir)).load()
    comp = state.components.pop("containerd")
    testbed._stop(comp["pid"], comp["marker"])
    _start_containerd(state, _binaries())


def gpu_annotations(nvml_profile: str) -> dict:
    """What the simulated operator reads to play GPU feature discovery for the node (docs/simulated-operator.md),
    from the node's NVML fixture: product, count, memory, MIG capability."""
    fixture = dra_devices.load_fixture(nvml_profile)
    gpus = dra_devices.fixture_gpus(fixture)
    first = gpus[0] if gpus else {}
    return {
        "sim.gpuops.io/gpu-product": str(first.get("name", "NVIDIA-GPU")).replace(" ", "-"),
        "sim.gpuops.io/gpu-count": str(len(gpus)),
        "sim.gpuops.io/gpu-memory": str(int(first.get("memory_total") or 0) // (1024 * 1024)),
        "sim.gpuops.io/mig-capable": "true" if isinstance(first.get("mig_max_devices"), int) else "false",
        "sim.gpuops.io/nvml-profile": nvml_profile,
    }


def _ready(core, name: str) -> bool:
    try:
        node = core.read_node(name)
    except Exception:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def _cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


def down(state: testbed.State) -> None:
    """Stop the kubelet and containerd, kill what they left and give the machine back (machine.give_back);
    raise TestbedError naming what stays behind."""
    info = state.data.get("real_node")
    if not info:
        return
    for name in ("kubelet", "containerd"):
        comp = state.components.pop(name, None)
        if comp:
            testbed._stop(comp["pid"], comp["marker"], grace=15)
    machine.kill_shims()
    left = machine.give_back(info["before"], testbed.log)
    shutil.rmtree(info["dir"], ignore_errors=True)
    state.data.pop("real_node")
    state.save()
    if left:
        raise testbed.TestbedError("the real node left these behind: " + "; ".join(left))
