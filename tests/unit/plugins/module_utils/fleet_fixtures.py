"""A validated fleet for the report specs: ten GPU nodes in three pools, built through the real fleet_summary, six
passing and four stopping at different layers (driver, toolkit, device-plugin, gpu-health). Shared by the
validation report specs and the browser spec."""

from __future__ import annotations

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
)

LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"}
PRODUCTS = {"h100": "NVIDIA-H100-80GB-HBM3", "a100": "NVIDIA-A100-SXM4-80GB", "l40s": "NVIDIA-L40S"}


def nvml(count=8, driver="570.124.06", available=True, health="ok", reasons=()):
    gpus = [{"index": i, "health": {"status": "ok", "reasons": []}} for i in range(count)]
    if reasons:
        gpus[0]["health"] = {"status": health, "reasons": list(reasons)}
    return {
        "available": available,
        "gpu_count": count if available else None,
        "driver_version": driver if available else None,
        "health": health if available else None,
        "reason": None if available else "driver_not_loaded",
        "hint": None if available else "Load the NVIDIA kernel module (lsmod | grep nvidia).",
        "gpus": gpus if available else [],
    }


def node(pool, allocatable=8, operands=None):
    ops = {c: {"name": "%s-%s" % (c, pool), "ready": True} for c in ("driver", "container-toolkit", "device-plugin")}
    ops.update(operands or {})
    labels = dict(LABELS, **{"nvidia.com/gpu.product": PRODUCTS[pool]})
    return {
        "allocatable": {"nvidia.com/gpu": allocatable},
        "capacity": {"nvidia.com/gpu": allocatable},
        "operands": ops,
        "labels": labels,
        "ready": True,
        "gpu": {"product": PRODUCTS[pool], "count": 8, "mig": {}},
    }


def mixed_fleet():
    """``(hosts, nodes)`` of the fleet; see the module docstring."""
    hosts, nodes = {}, {}

    def add(name, pool, facts, n):
        hosts["%s-host" % name] = {"node_name": name, "pool": pool, "nvidia_gpu": facts}
        nodes[name] = n

    for i in range(3):
        add("h100-%d" % i, "h100", nvml(), node("h100"))
    add("h100-3", "h100", nvml(available=False), node("h100", allocatable=0))
    add("h100-4", "h100", nvml(driver="550.127.08"), node("h100", allocatable=7))
    sandbox = {
        "device-plugin": {
            "name": "device-plugin-x",
            "ready": False,
            "waiting_reason": "ContainerCreating",
            "restarts": 0,
        }
    }
    add("a100-0", "a100", nvml(), node("a100"))
    add("a100-1", "a100", nvml(), node("a100", operands=sandbox))
    add("l40s-0", "l40s", nvml(count=4), node("l40s", allocatable=4))
    add("l40s-1", "l40s", nvml(count=4), node("l40s", allocatable=4))
    add(
        "l40s-2",
        "l40s",
        nvml(count=4, health="critical", reasons=["uncorrectable_ecc_volatile"]),
        node("l40s", allocatable=4),
    )
    return hosts, nodes


def mixed_summary():
    """The fleet's fleet_summary result (as the filter returns it, without the printed table)."""
    hosts, nodes = mixed_fleet()
    events = [
        {
            "involvedObject": {"kind": "Pod", "name": "device-plugin-x"},
            "message": 'Failed to create pod sandbox: no runtime for "nvidia" is configured',
            "lastTimestamp": "2026-12-03T15:00:00Z",
        }
    ]
    return fleet_summary(hosts, nodes, FleetInputs(sandbox_events=events))
