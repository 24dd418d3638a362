"""Specs for validating a node in DRA mode: after its operand pods, the DRA kubelet plugin, the node's ResourceSlices,
its published GPUs against NVML (count and UUIDs) and device taints, each named at layer dra; a node in
extended-resource mode keeps the allocatable check, and a mixed fleet is judged in one run."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.checks import (
    NodeEvidence,
    node_checks,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
)

UUIDS = ["GPU-%d" % i for i in range(4)]
LABELS = {"nvidia.com/gpu.present": "true"}  # no gpu-feature-discovery labels in DRA mode


def nvml(uuids=UUIDS):
    return {"available": True, "gpu_count": len(uuids), "health": "ok", "gpus": [{"uuid": u} for u in uuids]}


def device(i, taints=(), kind="gpu", parent=None):
    return {
        "name": "gpu-%d" % i,
        "type": kind,
        "uuid": "GPU-%d" % i if kind == "gpu" else "MIG-%d" % i,
        "parent_uuid": parent,
        "taints": list(taints),
    }


def pool(complete=True, stale=()):
    return {
        "name": "n",
        "generation": 2,
        "resource_slice_count": 1 if complete else 2,
        "slices": ["n-gpu.nvidia.com"],
        "stale_slices": list(stale),
        "complete": complete,
    }


def dra_node(devices=None, pools=None, plugin_ready=True, plugin=None, mode=None):
    devices = [device(i) for i in range(4)] if devices is None else devices
    pools = [pool()] if pools is None else pools
    ops = {"dra-driver": plugin or {"name": "dra-plugin-x", "ready": plugin_ready, "restarts": 0}}
    return {
        "name": "h100-0",
        "mode": mode or ("dra" if devices else "none"),
        "allocatable": {},
        "capacity": {},
        "operands": ops,
        "labels": LABELS,
        "ready": True,
        "conditions": {},
        "gpu": {"product": "H100", "count": 4, "mig": {}},
        "deploy": {"dra-driver": "true"},
        "dra": {
            "driver": "gpu.nvidia.com",
            "expected": True,
            "plugin_ready": plugin_ready,
            "pools": pools,
            "devices": devices,
            "devices_total": len(devices),
        },
    }


def judge(node, dra_summary=None, facts=None):
    return node_checks({"node_name": "n", "nvidia_gpu": facts or nvml()}, node, NodeEvidence(dra_summary=dra_summary))


def test_a_healthy_dra_node_passes_every_dra_check_and_skips_the_allocatable_one():
    checks, findings = judge(dra_node())
    assert findings == []
    assert [checks[c] for c in ("allocatable", "dra-plugin", "dra-slices", "dra-devices", "dra-taints")] == [
        "skipped",
        "pass",
        "pass",
        "pass",
        "pass",
    ]


def test_an_extended_resource_node_keeps_todays_checks_and_skips_the_dra_ones():
    gfd = dict(LABELS, **{"nvidia.com/gpu.product": "H100", "nvidia.com/gpu.count": "4"})
    node = dict(dra_node(devices=[]), mode="extended-resource", allocatable={"nvidia.com/gpu": 4}, labels=gfd)
    node["dra"] = dict(node["dra"], expected=False, pools=[])
    checks, findings = judge(node)
    assert findings == [] and checks["allocatable"] == "pass"
    assert {checks[c] for c in ("dra-plugin", "dra-slices", "dra-devices", "dra-taints")} == {"skipped"}


def test_a_crash_looping_plugin_is_named_once_at_layer_dra():
    pod = {"name": "dra-plugin-x", "ready": False, "waiting_reason": "CrashLoopBackOff", "restarts": 5}
    _checks, findings = judge(dra_node(plugin_ready=False, plugin=pod))
    assert [(f["check"], f["layer"]) for f in findings] == [("dra-plugin", "dra")]
    assert findings[0]["evidence"].startswith("DRA kubelet plugin pod dra-plugin-x is not ready (CrashLoopBackOff")


def test_a_missing_slice_is_named_at_layer_dra():
    _checks, findings = judge(dra_node(devices=[], pools=[]))
    assert [(f["check"], f["layer"]) for f in findings] == [("dra-slices", "dra")]
    assert "no ResourceSlice of driver gpu.nvidia.com" in findings[0]["evidence"]


def test_an_incomplete_pool_of_a_stale_generation_is_named():
    _checks, findings = judge(dra_node(devices=[], pools=[pool(complete=False, stale=["n-old"])]))
    assert [f["check"] for f in findings] == ["dra-slices", "dra-slices"]
    assert "incomplete: generation 2 announces 2 slice(s), 1 exist" in findings[0]["evidence"]
    assert "n-old" in findings[1]["evidence"]


def test_a_gpu_nvml_sees_but_the_slice_does_not_publish_is_named_by_uuid():
    _checks, findings = judge(dra_node(devices=[device(i) for i in range(3)]))
    assert [(f["check"], f["layer"]) for f in findings] == [("dra-devices", "dra")]
    assert findings[0]["evidence"] == "the node's ResourceSlices publish 3 GPU(s), NVML counts 4; not published: GPU-3"


def test_mig_devices_stand_for_their_parent_gpu():
    devices = [device(0), device(1)] + [device(10 + i, kind="mig", parent="GPU-%d" % (2 + i // 7)) for i in range(14)]
    assert judge(dra_node(devices=devices))[1] == []


def test_a_device_taint_is_named_with_its_key_and_effect():
    taint = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    _checks, findings = judge(dra_node(devices=[device(0, [taint])] + [device(i) for i in range(1, 4)]))
    assert [(f["check"], f["evidence"]) for f in findings] == [
        (
            "dra-taints",
            "1 device(s) on node h100-0 are tainted, and only claims that tolerate the taint get them: "
            "gpu-0 gpu.nvidia.com/xid=79:NoSchedule",
        )
    ]


def test_a_missing_device_class_fails_every_dra_node():
    _checks, findings = judge(dra_node(), dra_summary={"device_classes_missing": ["gpu.nvidia.com"]})
    assert [(f["layer"], f["evidence"]) for f in findings] == [
        ("dra", "DeviceClass gpu.nvidia.com does not exist: claims for it stay Pending")
    ]


def test_a_mixed_fleet_is_judged_in_one_run_each_node_in_its_mode():
    gfd = dict(LABELS, **{"nvidia.com/gpu.product": "H100", "nvidia.com/gpu.count": "4"})
    er = dict(dra_node(devices=[]), mode="extended-resource", allocatable={"nvidia.com/gpu": 3}, labels=gfd)
    er["dra"] = dict(er["dra"], expected=False, pools=[])
    hosts = {h: {"node_name": h, "pool": h, "nvidia_gpu": nvml()} for h in ("er", "dra")}
    smoke = {"er": {"status": "passed"}, "dra": {"status": "pending", "reason": "cannot allocate all claims"}}
    summary = fleet_summary(
        hosts, {"er": er, "dra": dra_node(devices=[device(i) for i in range(3)])}, FleetInputs(smoke=smoke)
    )
    rows = {r["node"]: r for r in summary["rows"]}
    assert (rows["er"]["mode"], rows["er"]["failing_layer"]) == ("extended-resource", "device-plugin")
    assert (rows["dra"]["mode"], rows["dra"]["failing_layer"], rows["dra"]["dra_devices"]) == ("dra", "dra", 3)
    assert [f["layer"] for f in rows["dra"]["findings"]] == ["dra", "scheduling"]
    assert summary["failed_by_layer"] == {"device-plugin": 1, "dra": 1}
