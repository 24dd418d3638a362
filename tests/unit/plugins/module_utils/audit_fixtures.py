"""Builders for audit inputs: host fact results, NVML GPUs (health from the real _nvml.health) and cluster results
(from the real _cluster_view over raw node dicts). Shared by the audit unit specs."""

from __future__ import annotations

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.nvml import health
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import cluster_view
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import DraIndex

DRIVER = "570.124.06"


def gpu(index, **over):
    """One nvidia_gpu_facts GPU entry: a healthy H100 unless overridden (nested dicts are merged)."""
    e = {
        "index": index,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-%04d" % index,
        "serial": "16509230%05d" % index,
        "pci_bus_id": "00000000:%02X:00.0" % (0x18 + index),
        "vbios_version": "96.00.99.00.01",
        "temperature_c": 34,
        "mig": {"current": False, "pending": False, "max_devices": 7, "devices": []},
        "ecc": {"current": True, "pending": True, "volatile_uncorrected": 0, "aggregate_uncorrected": 0},
        "retired_pages": {"single_bit": None, "double_bit": None, "pending": None},
        "remapped_rows": {"corrected": 0, "uncorrected": 0, "pending": False, "failure": False},
        "clock_event_reasons": ["gpu_idle"],
        "fabric": None,
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(e.get(key), dict):
            e[key] = dict(e[key], **value)
        else:
            e[key] = value
    e["health"] = health(e)
    return e


def nvml_result(gpus, driver=DRIVER, cuda="12.8", available=True, reason=None):
    statuses = [g["health"]["status"] for g in gpus]
    worst = "critical" if "critical" in statuses else ("warning" if "warning" in statuses else "ok")
    return {
        "changed": False,
        "ansible_facts": {
            "nvidia_gpu": {
                "available": available,
                "reason": reason,
                "hint": "load the driver" if reason else None,
                "driver_version": driver if available else None,
                "cuda_driver_version": cuda if available else None,
                "gpu_count": len(gpus),
                "gpus": gpus,
                "health": worst if available else None,
            }
        },
    }


def host_facts_result(kernel="5.15.0-105-generic", os_version="22.04", toolkit_mode="auto", default_runtime="nvidia"):
    return {
        "changed": False,
        "ansible_facts": {
            "gpu_host": {
                "kernel": {"release": kernel},
                "os": {"id": "ubuntu", "version_id": os_version},
                "nvidia_driver": {"loaded": True, "version": DRIVER},
                "container_toolkit": {
                    "installed": True,
                    "config_path": "/etc/nvidia-container-runtime/config.toml",
                    "mode": toolkit_mode,
                    "cdi_default_kind": "nvidia.com/gpu",
                    "root": "/",
                },
                "container_runtime": {
                    "name": "containerd",
                    "config": {
                        "version": 2,
                        "default_runtime": default_runtime,
                        "nvidia_runtime": {"binary": "nvidia-container-runtime"},
                        "cdi_enabled": True,
                    },
                },
                "problems": [],
            }
        },
    }


UNREACHABLE = {
    "unreachable": True,
    "changed": False,
    "msg": "Failed to connect to the host via ssh: Connection refused",
}


def host(cluster, node, pool, gpus=None, hf=None, nvml=None):
    gpus = [gpu(i) for i in range(8)] if gpus is None else gpus
    return {
        "cluster": cluster,
        "node_name": node,
        "pool": pool,
        "host_facts_result": host_facts_result() if hf is None else hf,
        "nvml_result": nvml_result(gpus) if nvml is None else nvml,
    }


def node(name, count=8, allocatable=None, driver=DRIVER, mig=None, product="NVIDIA-H100-80GB-HBM3"):
    """A raw Node dict as the operator and GFD label it."""
    major, minor, rev = (driver.split(".") + ["", "", ""])[:3]
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver-version.full": driver,
    }
    alloc = {"nvidia.com/gpu": str(count if allocatable is None else allocatable)}
    if mig:
        labels["nvidia.com/mig.config"] = mig["config"]
        alloc = {k: str(v) for k, v in mig["allocatable"].items()}
    return raw_node(name, labels, alloc)


def raw_node(name, labels, alloc):
    """A ready raw Node with ``labels`` whose capacity and allocatable are ``alloc``."""
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kernelVersion": "5.15.0-105-generic", "osImage": "Ubuntu 22.04.4 LTS"},
        },
    }


def cluster_result(nodes, dra=None):
    """gpu_cluster_info's result over raw nodes (the real cluster_view); ``dra``: its DraIndex, if any."""
    view = cluster_view({"nodes": nodes, "pods": [], "cluster_policies": [], "nvidia_drivers": [], "dra": dra})
    view.update({"changed": False, "kubernetes_version": {"git_version": "v1.36.3"}, "api_requests": 5})
    return {"result": view, "kubeconfig": "/k/%s" % "config", "context": None}


def failed_cluster(msg="kubeconfig '/nope' could not be read (No such file or directory)"):
    return {"result": {"failed": True, "changed": False, "msg": msg}, "kubeconfig": "/nope", "context": None}


def two_clusters():
    """east: pool h100 (3 hosts; h100-1 degraded, h100-2 drifts and mismatches), one unreachable host, one node
    without a host; west: pool a100 with MIG, one host whose driver lost its GPUs."""
    hosts = {
        "east-h100-0": host("east", "h100-0", "h100"),
        "east-h100-1": host(
            "east",
            "h100-1",
            "h100",
            gpus=[gpu(0), gpu(1), gpu(2, remapped_rows={"uncorrected": 1, "pending": True})]
            + [gpu(3, clock_event_reasons=["sw_power_cap"]), gpu(4)]
            + [gpu(5, ecc={"volatile_uncorrected": 3, "aggregate_uncorrected": 3})]
            + [gpu(6, temperature_c=92, clock_event_reasons=["sw_thermal_slowdown", "hw_thermal_slowdown"]), gpu(7)],
        ),
        "east-h100-2": host(
            "east",
            "h100-2",
            "h100",
            gpus=[gpu(i, vbios_version="96.00.74.00.11" if i == 0 else "96.00.99.00.01") for i in range(8)],
            hf=host_facts_result(kernel="5.15.0-124-generic", default_runtime="runc"),
            nvml=nvml_result([gpu(i) for i in range(8)], driver="550.127.08", cuda="12.4"),
        ),
        "east-h100-3": {
            "cluster": "east",
            "node_name": "h100-3",
            "pool": "h100",
            "host_facts_result": dict(UNREACHABLE),
            "nvml_result": {"changed": False, "skipped": True},
        },
        "west-a100-0": host(
            "west",
            "a100-0",
            "a100",
            gpus=[
                gpu(i, mig={"current": True, "pending": True, "devices": [{"index": 0}, {"index": 1}]})
                for i in range(2)
            ],
        ),
        "west-a100-1": host(
            "west", "a100-1", "a100", nvml=nvml_result([], available=False, reason="driver_not_loaded")
        ),
    }
    hosts["east-h100-2"]["nvml_result"]["ansible_facts"]["nvidia_gpu"]["gpus"] = [
        gpu(i, vbios_version="96.00.74.00.11" if i == 0 else "96.00.99.00.01") for i in range(8)
    ]
    clusters = {
        "east": cluster_result(
            [node("h100-0"), node("h100-1"), node("h100-2", allocatable=7), node("h100-3"), node("h100-9")]
        ),
        "west": cluster_result(
            [
                node("a100-0", count=2, mig={"config": "all-3g.40gb", "allocatable": {"nvidia.com/mig-3g.40gb": 4}}),
                node("a100-1", count=2, allocatable=0),
            ]
        ),
    }
    return copy.deepcopy(hosts), clusters


# ------------------------------------------------------------------------------------------------
# DRA: raw resource.k8s.io/v1 objects as NVIDIA's DRA driver publishes them, read by the real DraIndex


def dra_device(i, uuid=None, version="570.124.6", taints=None, product="NVIDIA H100 80GB HBM3"):
    """One published GPU device; its uuid is NVML's GPU ``i`` (see :func:`gpu`) unless given."""
    dev = {
        "name": "gpu-%d" % i,
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": uuid or "GPU-%04d" % i},
            "productName": {"string": product},
            "driverVersion": {"version": version},
            "index": {"int": i},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    if taints:
        dev["taints"] = taints
    return dev


def dra_mig_device(parent, j, profile="3g.40gb"):
    """A MIG device of NVML's GPU ``parent``."""
    return {
        "name": "gpu-%d-mig-%d" % (parent, j),
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "parentUUID": {"string": "GPU-%04d" % parent},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "driverVersion": {"version": "570.124.6"},
        },
    }


def dra_slice(node_name, devices, generation=1, count=1, name=None):
    pool = {"name": node_name, "generation": generation, "resourceSliceCount": count}
    return {
        "metadata": {"name": name or "%s-gpu.nvidia.com" % node_name},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": node_name, "pool": pool, "devices": devices},
    }


def dra_claim(ns, name, node_name, device):
    result = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node_name, "device": device}
    return {
        "metadata": {"namespace": ns, "name": name},
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": name + "-pod", "uid": "u"}],
        },
    }


def dra_node(name, extended=0):
    """A raw Node in the GPU Operator's GPUCluster mode: no GFD labels, the DRA driver deployed; ``extended``
    nvidia.com/gpu as well (a node in both modes)."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.dra-driver": "true"}
    return raw_node(name, labels, {"nvidia.com/gpu": str(extended)} if extended else {})


def dra_cluster_result(nodes, slices, claims=(), classes=("gpu.nvidia.com", "mig.nvidia.com")):
    """gpu_cluster_info's result over raw nodes and DRA objects (the real DraIndex)."""
    index = DraIndex(list(slices), list(claims), [{"metadata": {"name": c}, "spec": {}} for c in classes])
    return cluster_result(nodes, index)
