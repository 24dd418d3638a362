"""Specification of plugins/module_utils/_view/dra_view.py and dra_cel.py: the DRA view of GPU nodes from raw
resource.k8s.io/v1 objects, and the CEL subset device selectors are evaluated with."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view import cluster_view as cv
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view import dra_cel as cel
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view import dra_view as dv

DRIVER = "gpu.nvidia.com"
TAINT = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule", "timeAdded": "2026-12-04T10:00:00Z"}


def gpu(i, product="NVIDIA H100 80GB HBM3", version="570.124.6", taints=None):
    dev = {
        "name": "gpu-%d" % i,
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": "GPU-%04d" % i},
            "productName": {"string": product},
            "driverVersion": {"version": version},
            "index": {"int": i},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x18 + i)},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    if taints:
        dev["taints"] = taints
    return dev


def mig(i, profile="1g.10gb"):
    return {
        "name": "gpu-0-mig-0-%d-1" % i,
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "parentUUID": {"string": "GPU-0000"},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        },
    }


def rslice(node, devices, generation=1, count=1, name=None, driver=DRIVER):
    pool = {"name": node, "generation": generation, "resourceSliceCount": count}
    spec = {"driver": driver, "nodeName": node, "pool": pool, "devices": devices}
    return {"metadata": {"name": name or "%s-%s" % (node, driver)}, "spec": spec}


def claim(ns, name, node, device, admin=False, pods=("p",)):
    result = {"request": "gpu", "driver": DRIVER, "pool": node, "device": device}
    if admin:
        result["adminAccess"] = True
    return {
        "metadata": {"namespace": ns, "name": name},
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in pods],
        },
    }


def node(name, **labels):
    base = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.dra-driver": "true"}
    base.update(labels)
    return {"metadata": {"name": name, "labels": base}, "spec": {}, "status": {"capacity": {}}}


def plugin_pod(node_name, ready=True, waiting=None):
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {
            "name": "nvidia-dra-driver-kubelet-plugin-" + node_name,
            "labels": {"app": "nvidia-dra-driver-kubelet-plugin"},
        },
        "spec": {"nodeName": node_name},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "gpus", "restartCount": 5 if waiting else 0, "state": state}],
        },
    }


def view(nodes, slices, claims=(), classes=None, pods=()):
    index = dv.DraIndex(list(slices), list(claims), classes, DRIVER)
    return cv.cluster_view(
        {"nodes": nodes, "pods": list(pods), "cluster_policies": None, "nvidia_drivers": None, "dra": index}
    )


# ------------------------------------------------------------------------------------------------
# CEL selectors


class TestCel:
    def test_the_gpu_device_class_selects_gpus_and_not_mig_devices(self):
        expr = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
        assert cel.matches(expr, gpu(0), DRIVER) is True
        assert cel.matches(expr, mig(0), DRIVER) is False

    def test_unqualified_attributes_are_in_the_drivers_domain_qualified_ones_in_their_own(self):
        assert cel.matches(
            "device.attributes['gpu.nvidia.com']['productName'] == 'NVIDIA H100 80GB HBM3'", gpu(0), DRIVER
        )
        assert cel.matches("device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:19')", gpu(1), DRIVER)

    def test_a_missing_attribute_makes_the_device_not_match(self):
        assert cel.matches("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", gpu(0), DRIVER) is False
        assert cel.matches("!has(device.attributes['gpu.nvidia.com'].profile)", gpu(0), DRIVER) is True

    def test_versions_compare_as_versions_not_strings(self):
        newer = "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('570.86.15'))"
        assert cel.matches(newer, gpu(0, version="570.124.6"), DRIVER) is True
        assert cel.matches(newer, gpu(0, version="570.9.1"), DRIVER) is False

    def test_capacities_compare_as_quantities(self):
        assert cel.matches("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", gpu(0), DRIVER)
        assert not cel.matches(
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100G')) > 0", gpu(0), DRIVER
        )

    def test_or_not_in_and_parentheses(self):
        expr = (
            "!(device.attributes['gpu.nvidia.com'].index in [0, 1]) || device.attributes['gpu.nvidia.com'].index == 1"
        )
        assert [cel.matches(expr, gpu(i), DRIVER) for i in range(3)] == [False, True, True]

    @pytest.mark.parametrize("expr", ["size(device.attributes) > 0", "device.attributes.exists(a, a == 'x')", "1 +"])
    def test_cel_outside_the_subset_is_unsupported_not_guessed(self, expr):
        with pytest.raises(cel.Unsupported):
            cel.matches(expr, gpu(0), DRIVER)


# ------------------------------------------------------------------------------------------------
# One node


class TestNodeDevices:
    def test_devices_with_attributes_allocation_and_the_claims_holding_them(self):
        result = view([node("n0")], [rslice("n0", [gpu(i) for i in range(3)])], [claim("ml", "c1", "n0", "gpu-1")])
        dra = result["nodes"]["n0"]["dra"]
        assert [d["name"] for d in dra["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
        held = dra["devices"][1]
        assert (held["allocated"], held["claims"], held["pods"], held["free"]) == (True, ["ml/c1"], ["ml/p"], False)
        assert held["attributes"]["driverVersion"] == "570.124.6" and held["product"] == "NVIDIA H100 80GB HBM3"
        assert held["attributes"]["resource.kubernetes.io/pciBusID"] == "0000:19:00.0"
        assert (dra["devices_total"], dra["devices_allocated"], dra["devices_free"]) == (3, 1, 2)
        assert result["dra"]["allocated_claims"] == ["ml/c1"]

    def test_devices_sort_naturally(self):
        dra = view([node("n0")], [rslice("n0", [gpu(i) for i in (10, 2, 1)])])["nodes"]["n0"]["dra"]
        assert [d["name"] for d in dra["devices"]] == ["gpu-1", "gpu-2", "gpu-10"]

    def test_an_admin_access_claim_does_not_take_the_device(self):
        claims = [claim("gpu-operator", "validator", "n0", "gpu-0", admin=True)]
        device = view([node("n0")], [rslice("n0", [gpu(0)])], claims)["nodes"]["n0"]["dra"]["devices"][0]
        assert (device["allocated"], device["free"], device["admin_claims"]) == (
            False,
            True,
            ["gpu-operator/validator"],
        )

    def test_a_tainted_device_is_not_free_and_named_in_the_problems(self):
        dra = view([node("n0")], [rslice("n0", [gpu(0, taints=[TAINT]), gpu(1)])])["nodes"]["n0"]["dra"]
        assert dra["devices"][0]["taints"] == [
            {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule", "time_added": "2026-12-04T10:00:00Z"}
        ]
        assert (dra["devices_tainted"], dra["devices_free"]) == (1, 1)
        assert dra["problems"] == [
            "device gpu-0 is tainted gpu.nvidia.com/xid=79:NoSchedule: only claims that tolerate it get it"
        ]

    def test_only_the_newest_generation_counts_and_older_slices_are_stale(self):
        slices = [rslice("n0", [gpu(0)], generation=1, name="old"), rslice("n0", [gpu(0), gpu(1)], generation=2)]
        dra = view([node("n0")], slices)["nodes"]["n0"]["dra"]
        assert dra["pools"][0]["generation"] == 2 and dra["pools"][0]["stale_slices"] == ["old"]
        assert dra["pools"][0]["complete"] is True and dra["devices_total"] == 2
        assert "older generation than 2" in dra["problems"][0]

    def test_an_incomplete_pool_offers_no_device(self):
        slices = [rslice("n0", [gpu(0)], generation=3, count=2), rslice("n0", [gpu(0)], generation=2, name="n0-stale")]
        result = view([node("n0")], slices)
        dra = result["nodes"]["n0"]["dra"]
        assert dra["pools"][0]["complete"] is False and dra["devices"] == [] and result["nodes"]["n0"]["mode"] == "none"
        assert "pool n0 is incomplete: generation 3 announces 2 slice(s), 1 exist" in dra["problems"][0]

    def test_a_node_meant_to_run_the_driver_without_a_slice_says_so(self):
        dra = view([node("n0")], [])["nodes"]["n0"]["dra"]
        assert dra["expected"] is True
        assert dra["problems"] == ["no ResourceSlice of driver gpu.nvidia.com: the node offers no device to claims"]

    def test_a_crash_looping_kubelet_plugin_is_named_with_its_reason(self):
        pods = [plugin_pod("n0", ready=False, waiting="CrashLoopBackOff")]
        result = view([node("n0")], [rslice("n0", [gpu(0)])], pods=pods)
        n0 = result["nodes"]["n0"]
        assert (
            n0["operands"]["dra-driver"]["waiting_reason"] == "CrashLoopBackOff" and n0["dra"]["plugin_ready"] is False
        )
        assert n0["dra"]["problems"][0].startswith(
            "DRA kubelet plugin pod nvidia-dra-driver-kubelet-plugin-n0 is not ready (CrashLoopBackOff)"
        )

    def test_a_node_labelled_for_the_driver_without_its_plugin_pod_misses_the_dra_driver_operand(self):
        assert view([node("n0")], [rslice("n0", [gpu(0)])])["nodes"]["n0"]["operands_missing"] == ["dra-driver"]

    def test_slices_of_other_drivers_are_not_this_view(self):
        dra = view([node("n0")], [rslice("n0", [gpu(0)], driver="net.example.com")])["nodes"]["n0"]["dra"]
        assert dra["devices"] == [] and dra["pools"] == []


# ------------------------------------------------------------------------------------------------
# The fleet


class TestFleet:
    def test_mode_is_extended_resource_dra_both_or_none(self):
        classic = node("classic")
        classic["status"]["capacity"] = {"nvidia.com/gpu": "8"}
        both = node("both")
        both["status"]["capacity"] = {"nvidia.com/mig-1g.10gb": "7"}
        nodes = [classic, both, node("dra"), node("bare")]
        result = view(nodes, [rslice("dra", [gpu(0)]), rslice("both", [gpu(0)])])
        assert {n: v["mode"] for n, v in result["nodes"].items()} == {
            "classic": "extended-resource",
            "both": "both",
            "dra": "dra",
            "bare": "none",
        }
        assert result["totals"]["modes"] == {"extended-resource": 1, "both": 1, "dra": 1, "none": 1}

    def test_a_node_publishing_fewer_devices_than_its_peers_is_named(self):
        slices = [rslice("a", [gpu(i) for i in range(8)]), rslice("b", [gpu(i) for i in range(7)])]
        result = view([node("a"), node("b")], slices)
        assert result["nodes"]["a"]["dra"]["problems"] == []
        assert result["nodes"]["b"]["dra"]["problems"] == [
            "publishes 7 device(s), 1 fewer than other nodes with NVIDIA H100 80GB HBM3 (8)"
        ]

    def test_nodes_with_other_products_or_device_types_are_not_peers(self):
        slices = [rslice("h", [gpu(i) for i in range(8)]), rslice("a", [mig(i) for i in range(7)])]
        result = view([node("h"), node("a")], slices)
        assert all(not n["dra"]["problems"] for n in result["nodes"].values())

    def test_a_missing_device_class_for_published_devices_is_named(self):
        classes = [{"metadata": {"name": "gpu.nvidia.com"}, "spec": {}}]
        result = view([node("h"), node("a")], [rslice("h", [gpu(0)]), rslice("a", [mig(0)])], classes=classes)
        assert result["dra"]["device_classes_missing"] == ["mig.nvidia.com"]
        assert result["dra"]["problems"] == ["DeviceClass mig.nvidia.com does not exist: claims for it stay Pending"]

    def test_a_node_that_publishes_devices_is_a_gpu_node_without_any_gpu_label(self):
        unlabelled = {"metadata": {"name": "x", "labels": {}}, "spec": {}, "status": {}}
        assert list(view([unlabelled], [rslice("x", [gpu(0)])])["nodes"]) == ["x"]

    def test_without_dra_every_node_has_an_empty_dra_view(self):
        result = cv.cluster_view({"nodes": [node("n0")], "pods": []})
        assert result["dra"]["served"] is False and result["nodes"]["n0"]["dra"]["devices"] == []
