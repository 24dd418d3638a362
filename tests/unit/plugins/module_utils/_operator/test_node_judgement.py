"""Specs for the one judgement of a GPU node (_operator.node_judgement): the node and dra layers found from the
cluster's view of the node and its host's NVML facts - and gpu_validate_report, gpu_triage_info (node mode) and
gpu_audit_report, given the same objects, name the same layer and code for every node."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import (
    Context,
    judge_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import cluster_view
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.join import judgement
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import Snapshot
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.diagnose import diagnose
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.stack import NodeStack
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.checks import (
    NodeEvidence,
    node_checks,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (
    lowest_layer_first,
)

DRIVER = "gpu.nvidia.com"
GPU_CLASS = {"metadata": {"name": "gpu.nvidia.com"}}
XID = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
MAINTENANCE = {"key": "example.com/maintenance", "value": "rma", "effect": "NoExecute"}


# -- raw objects as the API server returns them ---------------------------------------------------


def node(name, ready=True):
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.dra-driver": "true",
    }
    condition = {"type": "Ready", "status": "True"}
    if not ready:
        condition = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "kubelet gone"}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": {"cpu": "8"}, "conditions": [condition]},
    }


def plugin_pod(name, crash=None):
    cs = {"name": "gpus", "ready": not crash, "restartCount": 0, "state": {"running": {}}}
    if crash:
        cs.update(restartCount=5, state={"waiting": {"reason": "CrashLoopBackOff"}})
        cs["lastState"] = {"terminated": {"reason": "Error", "exitCode": 1, "message": crash}}
    ready = {"type": "Ready", "status": "False" if crash else "True"}
    return {
        "metadata": {
            "name": "nvidia-dra-driver-kubelet-plugin-" + name,
            "namespace": "gpu-operator",
            "labels": {"app": "nvidia-dra-driver-kubelet-plugin"},
        },
        "spec": {"nodeName": name},
        "status": {"phase": "Running", "conditions": [ready], "containerStatuses": [cs]},
    }


def device(name, i, taints=None):
    dev = {
        "name": "gpu-%d" % i,
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": "GPU-%s-%d" % (name, i)},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
        },
    }
    if taints:
        dev["taints"] = taints
    return dev


def resource_slice(name, devices, generation=1, count=1, suffix=""):
    return {
        "metadata": {"name": "%s-gpu.nvidia.com%s" % (name, suffix)},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def nvml(name, count=4):
    return {
        "available": True,
        "gpu_count": count,
        "health": "ok",
        "gpus": [{"uuid": "GPU-%s-%d" % (name, i)} for i in range(count)],
    }


#: One node per fault: what the node shows and the layer and code every workflow must name first.
FAULTS = {
    "healthy": (None, None),
    "fewer": ("dra", "DevicesNotAsNVML"),  # its slice lists 3 of its 4 GPUs
    "noslice": ("dra", "NoResourceSlice"),
    "crashing": ("dra", "DraPluginNotReady"),
    "unplugged": ("dra", "DraPluginMissing"),
    "stale": ("dra", "PoolIncomplete"),
    "notready": ("node", "NodeNotReady"),
}


def fleet():
    """The raw objects of a DRA-only fleet with one node per :data:`FAULTS` entry."""
    nodes, pods, slices = [], [], []
    for name in FAULTS:
        nodes.append(node(name, ready=name != "notready"))
        if name != "unplugged":
            pods.append(plugin_pod(name, crash="ERROR_DRIVER_NOT_LOADED" if name == "crashing" else None))
        devices = [device(name, i) for i in range(4)]
        if name == "fewer":
            slices.append(resource_slice(name, devices[:3]))
        elif name == "stale":
            slices.append(resource_slice(name, devices, generation=3, count=2))
            slices.append(resource_slice(name, devices, generation=2, suffix="-old"))
        elif name != "noslice":
            slices.append(resource_slice(name, devices))
    return {"nodes": nodes, "operator_pods": pods, "slices": slices, "device_classes": [GPU_CLASS], "claims": []}


def first_error(findings, key):
    """``(layer, code)`` of the first error among ``findings`` (validate's findings are all errors)."""
    errors = [f for f in findings if f.get("severity", "error") == "error"]
    return (errors[0]["layer"], errors[0][key]) if errors else (None, None)


# -- the judgement itself ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def views():
    stack = NodeStack(Snapshot(**fleet()))
    return {name: stack.view(name) for name in FAULTS}


def test_a_healthy_dra_node_has_no_finding(views):
    assert judge_node(views["healthy"], nvml("healthy")) == []


def test_a_slice_missing_a_gpu_is_found_only_against_nvml(views):
    assert judge_node(views["fewer"]) == []  # nothing to compare with: unknown, not healthy-by-proof
    (found,) = judge_node(views["fewer"], nvml("fewer"))
    assert (found["layer"], found["code"]) == ("dra", "DevicesNotAsNVML")
    assert found["message"] == "the node's ResourceSlices publish 3 GPU(s), NVML counts 4; not published: GPU-fewer-3"
    assert found["details"]["not_published"] == ["GPU-fewer-3"]


def test_a_stale_generation_is_named_beside_the_incomplete_pool(views):
    codes = [f["code"] for f in judge_node(views["stale"], nvml("stale"))]
    assert codes == ["PoolIncomplete", "StaleSlices"]


def test_a_missing_device_class_is_found_on_every_dra_node(views):
    found = judge_node(views["healthy"], nvml("healthy"), Context(classes_missing=["gpu.nvidia.com"]))
    assert [(f["code"], f["message"]) for f in found] == [
        ("DeviceClassMissing", "DeviceClass gpu.nvidia.com does not exist: claims for it stay Pending")
    ]


def test_a_device_taints_fix_is_built_from_the_taint_itself():
    objects = fleet()
    objects["slices"] = [resource_slice("healthy", [device("healthy", 0, [MAINTENANCE]), device("healthy", 1)])]
    view = NodeStack(Snapshot(**objects)).view("healthy")
    (found,) = judge_node(view)
    assert (found["code"], found["severity"]) == ("DeviceTainted", "error")  # a GPU out of service
    assert "example.com/maintenance=rma:NoExecute" in found["message"]
    assert '{key: example.com/maintenance, operator: Equal, value: "rma", effect: NoExecute}' in found["fix"]
    assert "xid" not in found["fix"]


def test_a_notready_node_is_judged_at_the_node_layer_with_its_condition(views):
    (found, *rest) = judge_node(views["notready"], nvml("notready"))
    assert (found["layer"], found["code"]) == ("node", "NodeNotReady")
    assert found["message"] == "node notready is NotReady (NodeStatusUnknown: kubelet gone)"
    assert rest == []


# -- every workflow names the same layer and code -------------------------------------------------


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_validate_triage_and_audit_name_the_same_first_layer_and_code(name, views):
    facts = nvml(name)
    snap = Snapshot(nvml={name: facts}, **fleet())
    triaged = diagnose(snap, {"kind": "node", "namespace": None, "name": name})
    _checks, validated = node_checks({"node_name": name, "nvidia_gpu": facts}, views[name])
    audited = judgement(views[name], facts, {})

    layer, code = FAULTS[name]
    assert (triaged["first_failing_layer"], first_error(triaged["findings"], "reason")) == (layer, (layer, code))
    assert first_error(lowest_layer_first(validated), "code") == (layer, code)
    assert (audited["failing_layer"], first_error(audited["findings"], "code")) == (layer, (layer, code))


def test_triage_without_the_hosts_nvml_facts_compares_nothing_with_the_host():
    triaged = diagnose(Snapshot(**fleet()), {"kind": "node", "namespace": None, "name": "fewer"})
    assert [f for f in triaged["findings"] if f["layer"] == "dra"] == []


# -- nodes whose GPUs reach pods as extended resources ----------------------------------------------


def er_node(name, capacity=4, allocatable=None):
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.deploy.device-plugin": "true",
    }
    gpus = {"nvidia.com/gpu": str(capacity)}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": dict(gpus, cpu="8"),
            "allocatable": {"nvidia.com/gpu": str(capacity if allocatable is None else allocatable), "cpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


NO_RUNTIME = 'failed to get sandbox runtime: no runtime for "nvidia" is configured'


def device_plugin_pod(name, state):
    """The device plugin pod of node ``name``: ``ready``, ``starting`` or ``creating`` (its sandbox fails)."""
    pod = plugin_pod(name)
    pod["metadata"].update(
        name="nvidia-device-plugin-daemonset-" + name, labels={"app": "nvidia-device-plugin-daemonset"}
    )
    if state != "ready":
        pod["status"]["containerStatuses"][0]["ready"] = False
        pod["status"]["conditions"][0]["status"] = "False"
        waiting = "PodInitializing" if state == "starting" else "ContainerCreating"
        pod["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": waiting}}
    return pod


def sandbox_event(pod):
    return {
        "reason": "FailedCreatePodSandBox",
        "type": "Warning",
        "message": NO_RUNTIME,
        "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"]},
        "lastTimestamp": "2026-12-07T00:00:00Z",
    }


#: One extended-resource node per fault: its node, the state of its device plugin pod (None: none), and the layer
#: and code every workflow must name first.
ER_FAULTS = {
    "er-healthy": (er_node("er-healthy"), "ready", (None, None)),
    "er-silent": (er_node("er-silent", capacity=0), "ready", ("device-plugin", "DevicePluginNotAdvertising")),
    "er-noplugin": (er_node("er-noplugin", capacity=0), None, ("device-plugin", "DevicePluginMissing")),
    "er-starting": (er_node("er-starting", capacity=0), "starting", ("device-plugin", "DevicePluginNotReady")),
    "er-runtime": (er_node("er-runtime", capacity=0), "creating", ("toolkit", "RuntimeNotConfigured")),
    "er-three": (er_node("er-three", capacity=3), "ready", ("device-plugin", "AdvertisedNotAsNVML")),
    "er-xid": (er_node("er-xid", allocatable=3), "ready", ("gpu-health", "UnhealthyGPUs")),
}


def er_fleet():
    pods = [device_plugin_pod(n, state) for n, (_node, state, _e) in ER_FAULTS.items() if state is not None]
    events = [sandbox_event(p) for p in pods if p["metadata"]["name"].endswith("er-runtime")]
    return {"nodes": [n for n, _s, _e in ER_FAULTS.values()], "operator_pods": pods, "operator_events": events}


@pytest.mark.parametrize("name", sorted(ER_FAULTS))
def test_the_workflows_agree_on_extended_resource_nodes_too(name):
    facts, fleet = nvml(name), er_fleet()
    # gpu_cluster_info's view of the node: what gpu_validate_report and gpu_audit_report judge
    lists = {"nodes": fleet["nodes"], "pods": fleet["operator_pods"], "sandbox_events": fleet["operator_events"]}
    view = cluster_view(lists)["nodes"][name]
    triaged = diagnose(Snapshot(nvml={name: facts}, **fleet), {"kind": "node", "namespace": None, "name": name})
    sandbox = {e["involvedObject"]["name"]: e["message"] for e in fleet["operator_events"]}
    evidence = NodeEvidence(sandbox_events=sandbox)
    _checks, validated = node_checks({"node_name": name, "nvidia_gpu": facts}, view, evidence)
    audited = judgement(view, facts, {})

    layer, code = ER_FAULTS[name][2]
    assert first_error(lowest_layer_first(validated), "code") == (layer, code)
    assert first_error(triaged["findings"], "reason") == (layer, code)
    assert (audited["failing_layer"], first_error(audited["findings"], "code")) == (layer, (layer, code))


def test_a_node_that_advertises_fewer_gpus_than_nvml_counts_names_both_counts():
    view = NodeStack(Snapshot(**er_fleet())).view("er-three")
    assert judge_node(view) == []  # without NVML nothing says that 3 is too few
    (found,) = judge_node(view, nvml("er-three"))
    assert found["message"] == "node er-three advertises nvidia.com/gpu=3 but NVML counts 4 GPUs"


def test_time_slicing_replicas_multiply_what_nvml_counts():
    objects = er_fleet()
    node = er_node("er-healthy", capacity=16)
    node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
    objects["nodes"] = [node]
    view = NodeStack(Snapshot(**objects)).view("er-healthy")
    assert judge_node(view, nvml("er-healthy")) == []


def test_nvml_that_did_not_answer_is_the_driver_finding_and_leaves_the_device_layers_alone():
    view = NodeStack(Snapshot(**er_fleet())).view("er-silent")
    (found,) = judge_node(view, {"available": False, "reason": "driver_not_loaded"})
    assert (found["layer"], found["code"], found["message"]) == (
        "driver",
        "NVMLUnavailable",
        "NVML unavailable on the host: driver_not_loaded",
    )


def test_a_cpu_node_has_no_device_plugin_layer():
    cpu = {
        "metadata": {"name": "cpu-0", "labels": {}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    view = NodeStack(Snapshot(nodes=[cpu])).view("cpu-0")
    assert judge_node(view) == []
