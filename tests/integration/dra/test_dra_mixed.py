"""A mixed cluster on the ci-dra bed: the H100 pool offers its GPUs as the nvidia.com/gpu extended resource (as a
device plugin would: its capacity written on the nodes, no ResourceSlice), the A100 pool through DRA. The real
kube-scheduler places both kinds of pods; the modules tell the modes apart and test each pool its own way."""

from __future__ import annotations

import pytest

from tests.integration.dra.dra_faults import node_faults

H100 = ("h100-0", "h100-1", "h100-2")
KWOK_LOG = "ran under kwok"


def _advertise(dra, node, gpus):
    value = str(gpus) if gpus else None
    resources = {"nvidia.com/gpu": value}
    dra.core.patch_node_status(node, {"status": {"capacity": resources, "allocatable": resources}})


@pytest.fixture(scope="module")
def mixed(dra):
    """The H100 pool in extended-resource mode (8 nvidia.com/gpu each, its slices gone), the A100 node in DRA mode."""
    with node_faults(dra, dict.fromkeys(H100, "dra-slice-missing")):
        for node in H100:
            _advertise(dra, node, 8)
        try:
            yield dra
        finally:
            for node in H100:
                _advertise(dra, node, 0)


def test_each_pool_is_reported_in_its_own_mode(mixed, run):
    result = run("gpu_cluster_info", node_detail="all")
    assert {n: v["mode"] for n, v in result["nodes"].items()} == {
        "h100-0": "extended-resource",
        "h100-1": "extended-resource",
        "h100-2": "extended-resource",
        "a100-0": "dra",
    }
    assert result["totals"]["modes"] == {"extended-resource": 3, "dra": 1}
    assert result["totals"]["gpu_allocatable"] == 24 and result["totals"]["dra_devices"] == 44


def test_the_smoke_test_proves_each_pool_its_own_way(mixed, run):
    resource = run("gpu_smoke_test", label_selector="gpuops.io/pool=h100", expected_output=KWOK_LOG)
    assert {n: r["status"] for n, r in resource["nodes"].items()} == dict.fromkeys(H100, "passed")
    claim = run("gpu_smoke_test", allocation="claim", nodes=["a100-0"], expected_output=KWOK_LOG)
    assert claim["nodes"]["a100-0"]["status"] == "passed" and claim["nodes"]["a100-0"]["devices"]


def test_a_gpu_pod_larger_than_any_node_is_named_so_not_a_dra_only_cluster(mixed, run):
    with mixed.namespace() as ns:
        body = {
            "metadata": {"name": "big"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "registry.invalid/cuda:12", "resources": {"limits": {"nvidia.com/gpu": "9"}}}
                ],
                "tolerations": [{"operator": "Exists"}],
            },
        }
        mixed.core.create_namespaced_pod(ns, body)
        assert "Insufficient nvidia.com/gpu" in mixed.event(ns, "big", "FailedScheduling")
        result = run("gpu_triage_info", pod="%s/big" % ns)
    reasons = [f["reason"] for f in result["findings"]]
    # 9 nvidia.com/gpu where the H100 nodes advertise 8 each: impossible, and the resource is offered (not DRA-only)
    assert reasons == ["LargerThanAnyNode"] and result["findings"][0]["nodes"] == list(H100)
    assert result["first_failing_layer"] == "scheduling"
