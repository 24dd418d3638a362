"""gpu_cluster_info on the ci-dra bed (GPUs reached through DRA only), run through ansible-playbook as the
least-privilege identity: each node's mode and devices as the driver publishes them from NVML, the claims holding
devices, and every DRA fault of the simulated driver as a user sees it in the view."""

from __future__ import annotations

import pytest

from tests.integration.dra.dra_faults import NODE_FAULTS, device_class_missing, node_faults


@pytest.fixture(scope="module")
def healthy(dra, run):
    return run("gpu_cluster_info", node_detail="all")


def test_every_gpu_node_is_a_dra_node_with_the_devices_nvml_counts(dra, healthy):
    assert not healthy.get("failed"), healthy.get("msg")
    assert set(healthy["nodes"]) == set(dra.gpu_nodes)
    for node in dra.gpu_nodes:
        view = healthy["nodes"][node]
        assert view["mode"] == "dra" and view["capacity"] == {}
        nvml = dra.nvml_devices(node)
        devices = view["dra"]["devices"]
        assert sorted(d["name"] for d in devices) == sorted(d["name"] for d in nvml)
        assert {d["uuid"] for d in devices} == {d["attributes"]["uuid"]["string"] for d in nvml}
        (pool,) = view["dra"]["pools"]
        assert pool["complete"] is True and pool["stale_slices"] == [] and pool["slices"] == [node + "-gpu.nvidia.com"]
        assert view["dra"]["problems"] == [] and view["operands"]["dra-driver"]["ready"] is True
    a100 = healthy["nodes"]["a100-0"]["dra"]
    assert a100["device_types"] == {"mig": 42, "gpu": 2} and a100["driver_version"] == "550.127.5"
    assert {d["profile"] for d in a100["devices"] if d["type"] == "mig"} >= {"1g.10gb"}
    assert set(healthy["dra"]["device_classes"]) == {"gpu.nvidia.com", "mig.nvidia.com"}
    assert healthy["totals"]["modes"] == {"dra": 4} and healthy["totals"]["dra_devices"] == 8 * 3 + 44


def test_reads_in_a_bounded_number_of_requests(healthy):
    assert healthy["changed"] is False
    # ClusterPolicies, NVIDIADrivers, GPUClusters (no ClusterPolicy: GPUCluster mode), the operator's pods by label
    # (no ClusterPolicy names the namespace here, so it is found from them), version, nodes, the operator namespace's
    # pods, ResourceSlices, DeviceClasses, ResourceClaims
    assert healthy["api_requests"] == 10
    assert healthy["operator"]["namespace_source"] == "operator_pods"
    assert (healthy["operator"]["mode"], healthy["operator"]["gpu_cluster"]) == ("gpucluster", "gpu-cluster")


def test_a_claimed_device_names_its_claim_and_pod(dra, run):
    with dra.namespace() as ns:
        dra.claim_template(ns, "one-gpu")
        dra.pod(ns, "train", "one-gpu", node="h100-0")
        dra.running(ns, "train")
        claim = dra.claim_of(ns, "train")["metadata"]["name"]
        (allocated,) = dra.allocation(ns, "train")
        view = run("gpu_cluster_info", node_detail="all")["nodes"]["h100-0"]["dra"]
        held = [d for d in view["devices"] if d["allocated"]]
        assert [(d["name"], d["claims"], d["pods"]) for d in held] == [
            (allocated["device"], ["%s/%s" % (ns, claim)], ["%s/train" % ns])
        ]
        assert (view["devices_allocated"], view["devices_free"]) == (1, 7)


@pytest.fixture(scope="module")
def faulty(dra, run):
    """The view while every node-level DRA fault is on (healed right after)."""
    with node_faults(dra, NODE_FAULTS):
        return run("gpu_cluster_info", node_detail="all")


def test_a_node_whose_slice_is_missing_offers_no_device(faulty):
    node = faulty["nodes"]["h100-0"]
    assert NODE_FAULTS["h100-0"] == "dra-slice-missing"
    assert node["mode"] == "none" and node["dra"]["expected"] is True and node["dra"]["devices"] == []
    assert node["dra"]["problems"] == ["no ResourceSlice of driver gpu.nvidia.com: the node offers no device to claims"]


def test_a_slice_with_fewer_devices_is_named_against_its_peers(faulty):
    node = faulty["nodes"]["h100-1"]
    assert node["dra"]["devices_total"] == 7 and "gpu-7" not in {d["name"] for d in node["dra"]["devices"]}
    assert "publishes 7 device(s), 1 fewer than other nodes with NVIDIA H100 80GB HBM3 (8)" in node["dra"]["problems"]


def test_a_crash_looping_kubelet_plugin_shows_in_its_operand_pod(faulty):
    node = faulty["nodes"]["h100-1"]
    plugin = node["operands"]["dra-driver"]
    assert (plugin["ready"], plugin["waiting_reason"]) == (False, "CrashLoopBackOff")
    assert "ERROR_DRIVER_NOT_LOADED" in plugin["last_termination_message"]
    assert node["operands_ready"] is False and node["dra"]["plugin_ready"] is False
    assert any(p.startswith("DRA kubelet plugin pod %s is not ready" % plugin["name"]) for p in node["dra"]["problems"])


def test_a_device_taint_is_shown_and_the_device_is_not_free(faulty):
    dra = faulty["nodes"]["h100-2"]["dra"]
    first = dra["devices"][0]
    assert [(t["key"], t["value"], t["effect"]) for t in first["taints"]] == [
        ("gpu.nvidia.com/xid", "79", "NoSchedule")
    ]
    assert first["taints"][0]["time_added"]  # stamped by the API server
    assert first["free"] is False and (dra["devices_tainted"], dra["devices_free"]) == (1, 7)
    assert dra["problems"] == [
        "device gpu-0 is tainted gpu.nvidia.com/xid=79:NoSchedule: only claims that tolerate it get it"
    ]


def test_a_stale_generation_leaves_the_pool_incomplete_and_without_devices(faulty):
    dra = faulty["nodes"]["a100-0"]["dra"]
    (pool,) = dra["pools"]
    assert (pool["complete"], pool["resource_slice_count"], pool["slices"]) == (False, 2, ["a100-0-gpu.nvidia.com"])
    assert pool["stale_slices"] == ["a100-0-gpu.nvidia.com-stale"]
    assert dra["devices"] == [] and faulty["nodes"]["a100-0"]["mode"] == "none"
    assert dra["problems"][0].startswith(
        "pool a100-0 is incomplete: generation %d announces 2 slice(s), 1 exist" % pool["generation"]
    )


def test_a_missing_device_class_is_named(dra, run):
    with device_class_missing(dra):
        result = run("gpu_cluster_info", node_detail="all")
    assert result["dra"]["device_classes_missing"] == ["gpu.nvidia.com"]
    assert result["dra"]["problems"] == ["DeviceClass gpu.nvidia.com does not exist: claims for it stay Pending"]
    assert set(result["dra"]["device_classes"]) == {"mig.nvidia.com"}
