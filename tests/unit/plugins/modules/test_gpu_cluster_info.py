"""Specification of plugins/modules/gpu_cluster_info.py with a stubbed API server (no cluster)."""

from __future__ import annotations

import module_harness as harness
import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from module_harness import ReadOnlyApiServer

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_cluster_info


def stub_server(nodes=(), pods=(), policies=(), drivers=(), missing=(), forbidden=(), dra=None):
    """The API server (a v1.33 one) holding ``nodes``, the operator's ``pods`` in gpu-operator, ClusterPolicies and
    NVIDIADrivers; with ``dra`` (slices, classes, claims) it serves resource.k8s.io/v1; ``missing`` paths are not
    served and ``forbidden`` ones refused."""
    collections = {
        "/api/v1/nodes": list(nodes),
        "/api/v1/namespaces/gpu-operator/pods": list(pods),
        "/api/v1/pods": [],  # the operator's own pods (none: the namespace is the conventional one)
        "/apis/nvidia.com/v1/clusterpolicies": list(policies),
        "/apis/nvidia.com/v1alpha1/nvidiadrivers": list(drivers),
    }
    if dra is not None:
        for plural, items in zip(("resourceslices", "deviceclasses", "resourceclaims"), dra):
            collections["/apis/resource.k8s.io/v1/" + plural] = list(items)
    for path in missing:
        collections.pop(path)
    return ReadOnlyApiServer("gpu_cluster_info", collections, forbidden=forbidden, version="v1.33.1")


def run_module(server, monkeypatch, **args):
    return harness.run_module(gpu_cluster_info, monkeypatch, args, server=server)


def gpu_node(name, pool="h100", **labels):
    base = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8", "gpuops.io/pool": pool}
    base.update(labels)
    return {
        "metadata": {"name": name, "labels": base},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}, "conditions": []},
    }


def operand(name, node_name, app):
    return {
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node_name},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


CPU_NODE = {"metadata": {"name": "cpu-0", "labels": {}}, "spec": {}, "status": {"capacity": {"cpu": "4"}}}
POLICY = {"metadata": {"name": "cluster-policy"}, "spec": {}, "status": {"state": "ready", "namespace": "gpu-operator"}}


def test_returns_the_gpu_view_and_reports_no_change(monkeypatch):
    server = stub_server(
        nodes=[gpu_node("g0"), gpu_node("g1"), CPU_NODE],
        pods=[operand("nvidia-driver-daemonset-a", "g0", "nvidia-driver-daemonset")],
        policies=[POLICY],
    )
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "exit" and result["changed"] is False
    assert sorted(result["nodes"]) == ["g0", "g1"]
    assert result["nodes"]["g0"]["operands"]["driver"]["ready"] is True
    assert result["cluster_policy"]["state"] == "ready"
    assert result["nvidia_drivers"] == []
    assert result["kubernetes_version"]["git_version"] == "v1.33.1"
    assert result["totals"]["gpu_allocatable"] == 16


def test_makes_one_request_per_list_page_and_never_one_per_node(monkeypatch):
    nodes = [gpu_node("g%03d" % i) for i in range(120)]
    pods = [operand("p%03d" % i, "g%03d" % i, "nvidia-device-plugin-daemonset") for i in range(120)]
    server = stub_server(nodes=nodes, pods=pods, policies=[POLICY])
    result = run_module(server, monkeypatch, page_size=50)
    # version + 3 node pages + 3 pod pages + 1 ClusterPolicy page + 1 NVIDIADriver page + 1 ResourceSlice LIST (404)
    assert result["api_requests"] == 10 == len(server.requests)
    assert all(query.get("limit") == "50" for path, query in server.requests if path != "/version")
    assert [q["fieldSelector"] for _p, q in server.requests if "fieldSelector" in q] == ["spec.driver=gpu.nvidia.com"]


def test_a_thousand_gpu_nodes_with_seven_operands_each_take_nine_requests_by_default(monkeypatch):
    nodes = [gpu_node("g%04d" % i) for i in range(1000)]
    apps = [
        "nvidia-driver-daemonset",
        "nvidia-device-plugin-daemonset",
        "nvidia-dcgm-exporter",
        "gpu-feature-discovery",
        "nvidia-container-toolkit-daemonset",
        "nvidia-operator-validator",
        "nvidia-mig-manager",
    ]
    pods = [operand("%s-%04d" % (app, i), "g%04d" % i, app) for i in range(1000) for app in apps]
    server = stub_server(nodes=nodes, pods=pods, policies=[POLICY], dra=([], [], []))
    result = run_module(server, monkeypatch)
    # version + 1 node page + 4 pod pages (7,000 / 2,000) + ClusterPolicies + NVIDIADrivers + ResourceSlices (none,
    # so no DeviceClass or ResourceClaim LIST)
    assert result["api_requests"] == 9 == len(server.requests)
    assert result["totals"]["nodes"] == 1000 and result["totals"]["operand_pods"] == 7000
    assert all(len(n["operands"]) == 7 for n in result["nodes"].values()), "every page was followed"


# ------------------------------------------------------------------------------------------------
# node_detail: results shaped for fleets


def fleet_with_one_cordoned_node():
    """Three Ready GPU nodes with a ready device-plugin pod each; g1 is cordoned."""
    nodes = [gpu_node("g%d" % i) for i in range(3)]
    for node in nodes:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    nodes[1]["spec"]["unschedulable"] = True
    app = "nvidia-device-plugin-daemonset"
    pods = [operand("%s-%d" % (app, i), "g%d" % i, app) for i in range(3)]
    return stub_server(nodes=nodes, pods=pods, policies=[POLICY])


def test_by_default_only_the_nodes_with_a_problem_are_returned_with_totals_of_all_in_the_same_requests(monkeypatch):
    full = run_module(fleet_with_one_cordoned_node(), monkeypatch, node_detail="all")
    fleet = run_module(fleet_with_one_cordoned_node(), monkeypatch)
    assert sorted(full["nodes"]) == sorted(full["node_summary"]) == ["g0", "g1", "g2"], "all keeps the full shape"
    assert list(fleet["nodes"]) == list(fleet["node_summary"]) == ["g1"]
    assert fleet["nodes"]["g1"] == full["nodes"]["g1"], "a node with a problem keeps its full view"
    assert fleet["node_summary"]["g1"] == full["node_summary"]["g1"]
    assert fleet["node_summary"]["g1"]["problems"] == ["unschedulable", "foreign-quarantine"]  # nobody upgrades it
    assert fleet["totals"] == full["totals"] and fleet["totals"]["nodes"] == 3
    assert fleet["totals"]["nodes_unschedulable"] == 1
    assert fleet["api_requests"] == full["api_requests"]


def test_node_detail_summary_adds_the_summary_of_every_node_and_none_drops_the_node_views(monkeypatch):
    full = run_module(fleet_with_one_cordoned_node(), monkeypatch, node_detail="all")
    summary = run_module(fleet_with_one_cordoned_node(), monkeypatch, node_detail="summary")
    none = run_module(fleet_with_one_cordoned_node(), monkeypatch, node_detail="none")
    assert list(summary["nodes"]) == ["g1"] and none["nodes"] == {}
    assert summary["node_summary"] == none["node_summary"] == full["node_summary"]
    assert [summary["node_summary"][n]["problems"] for n in ("g0", "g2")] == [[], []]
    assert summary["node_summary"]["g0"]["gpu_allocatable"] == 8
    assert summary["totals"] == none["totals"] == full["totals"]


def test_node_detail_outside_its_choices_is_rejected(monkeypatch):
    result = run_module(fleet_with_one_cordoned_node(), monkeypatch, node_detail="some")
    assert result["_kind"] == "fail" and "node_detail" in result["msg"]


def test_label_selector_is_sent_to_the_api_server_and_not_filtered_again(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0", pool="canary"), gpu_node("g1")])
    result = run_module(server, monkeypatch, label_selector="gpuops.io/pool=canary")
    assert list(result["nodes"]) == ["g0"]
    assert ("/api/v1/nodes", {"labelSelector": "gpuops.io/pool=canary", "limit": "2000"}) in server.requests


def test_operator_namespace_selects_where_operand_pods_are_listed(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0")])
    server.collections["/api/v1/namespaces/nvidia-gpu-operator/pods"] = [
        operand("nvidia-dcgm-exporter-x", "g0", "nvidia-dcgm-exporter")
    ]
    result = run_module(server, monkeypatch, operator_namespace="nvidia-gpu-operator")
    assert list(result["nodes"]["g0"]["operands"]) == ["dcgm-exporter"]


def test_missing_gpu_operator_crds_are_not_an_error(monkeypatch):
    server = stub_server(
        nodes=[gpu_node("g0")],
        missing=["/apis/nvidia.com/v1/clusterpolicies", "/apis/nvidia.com/v1alpha1/nvidiadrivers"],
    )
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "exit"
    assert result["cluster_policy"] is None
    assert result["crds"] == {"clusterpolicies.nvidia.com": False, "nvidiadrivers.nvidia.com": False}


def test_missing_rbac_fails_with_the_permission_to_grant(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0")], forbidden=["/api/v1/namespaces/gpu-operator/pods"])
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "fail" and result["status"] == 403
    assert "grant this user RBAC permission to list pods in namespace gpu-operator" in result["msg"]


def test_page_size_below_one_is_rejected(monkeypatch):
    result = run_module(stub_server(), monkeypatch, page_size=0)
    assert result["_kind"] == "fail" and "option page_size: 0 is refused" in result["msg"]


def test_check_mode_returns_the_same_data(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0")])
    normal = run_module(server, monkeypatch)
    checked = run_module(server, monkeypatch, _ansible_check_mode=True)
    assert checked["nodes"] == normal["nodes"] and checked["changed"] is False


def test_unreadable_kubeconfig_fails_cleanly_through_the_real_client_factory(tmp_path):
    missing = str(tmp_path / "missing-kubeconfig")
    outcome = {}

    class Exit(Exception):
        pass

    def fail(self, **kwargs):
        outcome.update(kwargs)
        raise Exit

    mp = pytest.MonkeyPatch()
    mp.setattr(basic.AnsibleModule, "fail_json", fail)
    try:
        with patch_module_args({"kubeconfig": missing}), pytest.raises(Exit):
            gpu_cluster_info.main()
    finally:
        mp.undo()
    assert missing in outcome["msg"] and "could not be read" in outcome["msg"]


def test_argument_spec_is_the_kubeconfig_quarantine_and_operator_names_specs_plus_four_options():
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
        KUBECONFIG_ARG_SPEC,
        OPERATOR_NAMES_ARG_SPEC,
        QUARANTINE_ARG_SPEC,
    )

    spec = gpu_cluster_info.argspec()
    assert spec["quarantine_markers"] == QUARANTINE_ARG_SPEC["quarantine_markers"]
    assert {k: spec[k] for k in OPERATOR_NAMES_ARG_SPEC} == OPERATOR_NAMES_ARG_SPEC
    assert set(spec) - set(KUBECONFIG_ARG_SPEC) - set(QUARANTINE_ARG_SPEC) - set(OPERATOR_NAMES_ARG_SPEC) == {
        "label_selector",
        "page_size",
        "dra_driver",
        "node_detail",
    }
    assert spec["node_detail"] == {
        "type": "str",
        "choices": ["all", "summary", "problems", "none"],
        "default": "problems",
    }
    assert spec["dra_driver"]["default"] == "gpu.nvidia.com"
    assert spec["page_size"]["default"] == 2000
    assert "default" not in spec["operator_namespace"]  # discovered


# ------------------------------------------------------------------------------------------------
# DRA (resource.k8s.io/v1)


def dra_node(name):
    """A node of the GPU Operator's GPUCluster mode: labelled, no nvidia.com/gpu capacity."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.dra-driver": "true"}
    return {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {"capacity": {"cpu": "8"}}}


def resource_slice(node_name, devices=8, driver="gpu.nvidia.com"):
    devs = [
        {
            "name": "gpu-%d" % i,
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "driverVersion": {"version": "570.124.6"},
            },
        }
        for i in range(devices)
    ]
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 1}
    spec = {"driver": driver, "nodeName": node_name, "pool": pool, "devices": devs}
    return {"metadata": {"name": "%s-%s" % (node_name, driver)}, "spec": spec}


def allocated_claim(ns, name, node_name, device, pod="train-0"):
    result = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node_name, "device": device}
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": pod, "uid": "u1"}],
        },
    }


GPU_CLASS = {
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
}


def test_a_dra_node_reports_its_mode_devices_and_the_claims_holding_them(monkeypatch):
    claim = allocated_claim("ml", "train-0-gpu-x7k2p", "d0", "gpu-3")
    server = stub_server(nodes=[dra_node("d0"), gpu_node("g0")], dra=([resource_slice("d0")], [GPU_CLASS], [claim]))
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "exit"
    assert (result["nodes"]["d0"]["mode"], result["nodes"]["g0"]["mode"]) == ("dra", "extended-resource")
    dra = result["nodes"]["d0"]["dra"]
    assert (dra["devices_total"], dra["devices_allocated"], dra["devices_free"]) == (8, 1, 7)
    held = [d for d in dra["devices"] if d["allocated"]]
    assert [(d["name"], d["claims"], d["pods"]) for d in held] == [("gpu-3", ["ml/train-0-gpu-x7k2p"], ["ml/train-0"])]
    assert dra["driver_version"] == "570.124.6" and dra["problems"] == []
    assert result["dra"]["device_classes"]["gpu.nvidia.com"]["selectors"] == ["device.driver == 'gpu.nvidia.com'"]
    assert result["totals"]["modes"] == {"dra": 1, "extended-resource": 1}
    assert (result["totals"]["dra_devices"], result["totals"]["dra_devices_free"]) == (8, 7)


def test_a_thousand_dra_nodes_with_three_operands_and_two_thousand_claims_take_eleven_requests(monkeypatch):
    names = ["d%04d" % i for i in range(1000)]
    apps = ["nvidia-dra-driver-kubelet-plugin", "nvidia-dcgm-exporter", "nvidia-container-toolkit-daemonset"]
    pods = [operand("%s-%s" % (app, n), n, app) for n in names for app in apps]
    claims = [
        allocated_claim("ml", "c-%s-%d" % (n, i), n, "gpu-%d" % i, "p-%s-%d" % (n, i)) for n in names for i in (0, 1)
    ]
    server = stub_server(
        nodes=[dra_node(n) for n in names],
        pods=pods,
        dra=([resource_slice(n) for n in names], [GPU_CLASS], claims),
    )
    result = run_module(server, monkeypatch)
    # version + nodes + 2 pod pages (3,000) + ClusterPolicies + NVIDIADrivers + GPUClusters (no ClusterPolicy) + the
    # operator's pods (no ClusterPolicy reports its namespace) + ResourceSlices + DeviceClasses + ResourceClaims
    assert result["api_requests"] == 11 == len(server.requests)
    assert result["totals"]["modes"] == {"dra": 1000}
    assert (result["totals"]["dra_devices"], result["totals"]["dra_devices_allocated"]) == (8000, 2000)


def test_a_cluster_that_does_not_serve_resource_k8s_io_v1_has_no_dra_and_does_not_fail(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0")])  # every resource.k8s.io path answers 404
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "exit"
    assert result["dra"]["served"] is False and result["dra"]["device_classes"] is None
    assert result["nodes"]["g0"]["dra"]["devices"] == [] and result["nodes"]["g0"]["mode"] == "extended-resource"


def test_without_any_slice_of_the_driver_classes_and_claims_are_not_listed(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0")], dra=([resource_slice("x", driver="net.example.com")], [], []))
    result = run_module(server, monkeypatch)
    listed = [p for p in server.paths() if p.startswith("/apis/resource.k8s.io/")]
    assert listed == ["/apis/resource.k8s.io/v1/resourceslices"]
    assert result["dra"]["served"] is True and result["dra"]["claims_listed"] is False


def test_a_deleted_device_class_is_named(monkeypatch):
    server = stub_server(nodes=[dra_node("d0")], dra=([resource_slice("d0")], [], []))
    result = run_module(server, monkeypatch)
    assert result["dra"]["device_classes_missing"] == ["gpu.nvidia.com"]
    assert "DeviceClass gpu.nvidia.com does not exist" in result["dra"]["problems"][0]


def test_dra_driver_selects_whose_slices_are_read(monkeypatch):
    server = stub_server(nodes=[dra_node("d0")], dra=([resource_slice("d0", driver="gpu.example.com")], [], []))
    result = run_module(server, monkeypatch, dra_driver="gpu.example.com")
    assert (
        result["nodes"]["d0"]["dra"]["devices_total"] == 8
        and result["nodes"]["d0"]["dra"]["driver"] == "gpu.example.com"
    )


def test_missing_rbac_on_resource_slices_fails_with_the_permission_to_grant(monkeypatch):
    server = stub_server(
        nodes=[dra_node("d0")], dra=([], [], []), forbidden=["/apis/resource.k8s.io/v1/resourceslices"]
    )
    result = run_module(server, monkeypatch)
    assert result["_kind"] == "fail" and result["status"] == 403 and "resourceslices" in result["msg"]


UPGRADE_READS = ["/api/v1/pods", "/apis/policy/v1/poddisruptionbudgets", "/api/v1/namespaces/default/events"]


def test_a_cluster_whose_driver_upgrades_are_done_costs_no_read_for_them(monkeypatch):
    done = gpu_node("g0", **{"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"})
    server = stub_server(nodes=[done], policies=[POLICY])
    result = run_module(server, monkeypatch)
    assert result["driver_upgrades"] == []
    assert not [p for p in server.paths() if p in UPGRADE_READS[1:]]


def test_a_driver_upgrade_held_by_the_skip_label_is_reported_with_its_cause_and_fix(monkeypatch):
    held = gpu_node(
        "g0",
        **{"nvidia.com/gpu-driver-upgrade-state": "upgrade-required", "nvidia.com/gpu-driver-upgrade.skip": "true"},
    )
    server = stub_server(nodes=[held, gpu_node("g1")], policies=[POLICY])
    server.collections.update({UPGRADE_READS[1]: [], UPGRADE_READS[2]: []})
    result = run_module(server, monkeypatch)
    (entry,) = result["driver_upgrades"]
    assert (entry["node"], entry["state"], entry["stalled"]) == ("g0", "upgrade-required", True)
    assert "skip label nvidia.com/gpu-driver-upgrade.skip=true" in entry["cause"]
    assert entry["fix"] == "kubectl label node g0 nvidia.com/gpu-driver-upgrade.skip-"
    assert [p for p in server.paths() if p in UPGRADE_READS] == UPGRADE_READS
