"""The simulated DRA driver's faults for the collection's DRA specs: every node-level fault at once, each on its own
GPU node of ci-dra (one module run sees them all), and the GPUCluster's DeviceClass fault."""

from __future__ import annotations

import contextlib

from tests.integration.helpers import wait_for
from tests.integration.testbed.dra_helpers import FAULT

#: One node fault (or two) per GPU node of ci-dra, so that one run of a module sees every node-level DRA fault.
NODE_FAULTS = {
    "h100-0": "dra-slice-missing",
    "h100-1": "dra-fewer-devices,dra-plugin-crashloop",
    "h100-2": "dra-device-taint",
    "a100-0": "dra-stale-generation",
}


def _visible(dra, node, fault):
    """True once the simulated driver shows ``fault`` on ``node``."""
    slices = dra.slices(node)
    devices = slices[0]["spec"]["devices"] if slices else []
    pod = dra.plugin_pod(node)
    checks = {
        "dra-slice-missing": not slices,
        "dra-fewer-devices": len(devices) == len(dra.nvml_devices(node)) - 1,
        "dra-device-taint": bool(devices and devices[0].get("taints")),
        "dra-stale-generation": len(slices) == 2,
        "dra-plugin-crashloop": pod is not None
        and any(
            getattr(s.state.waiting, "reason", None) == "CrashLoopBackOff" for s in pod.status.container_statuses or []
        ),
    }
    return checks[fault]


@contextlib.contextmanager
def node_faults(dra, faults):
    """``faults`` (``{node: "fault[,fault]"}``) injected at once and waited for; healed (the bed healthy) on exit."""
    for node, value in faults.items():
        dra.core.patch_node(node, {"metadata": {"annotations": {FAULT: value}}})
    try:
        for node, value in faults.items():
            for fault in value.split(","):
                wait_for(lambda n=node, f=fault: _visible(dra, n, f), 60, 0.5, what="%s on %s" % (fault, node))
        yield faults
    finally:
        for node in faults:
            dra.core.patch_node(node, {"metadata": {"annotations": {FAULT: None}}})
        dra.wait_healthy(timeout=120)


@contextlib.contextmanager
def device_class_missing(dra):
    """DeviceClass gpu.nvidia.com deleted (the GPUCluster's fault) until the block ends."""
    with dra.fault("dra-deviceclass-missing"):
        wait_for(lambda: "gpu.nvidia.com" not in dra.device_classes(), 60, 0.5, what="DeviceClass gpu.nvidia.com gone")
        yield
