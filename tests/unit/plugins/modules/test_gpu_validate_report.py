"""Specification of plugins/modules/gpu_validate_report.py with a stubbed API server (no cluster): the verdict of
fleet_summary over the cluster's full view, computed in the module, with the reports written by the module."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import module_harness as harness
from module_harness import ReadOnlyApiServer
from test_gpu_cluster_info import POLICY, gpu_node, operand

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
from fleet_fixtures import nvml  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import cluster_view  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (  # noqa: E402
    FleetInputs,
    fleet_summary,
)
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_validate_report  # noqa: E402

NS = "/api/v1/namespaces/gpu-operator"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/gpu-operator/endpointslices"
SANDBOX_EVENT = {
    "metadata": {"name": "e1", "namespace": "gpu-operator"},
    "reason": "FailedCreatePodSandBox",
    "involvedObject": {"kind": "Pod", "name": "nvidia-device-plugin-daemonset-g1"},
    "message": 'failed to get sandbox runtime: no runtime for "nvidia" is configured',
}


def stub_server(exporter=True):
    """The API server holding three GPU nodes (g2 held by admission), their device plugin pods (g1's waiting for its
    sandbox, which its Event names; none on g2), a ClusterPolicy, and the exporter's Service unless ``exporter`` is
    false."""
    app = "nvidia-device-plugin-daemonset"
    nodes = [gpu_node("g%d" % i, **{"nvidia.com/gpu.deploy.device-plugin": "true"}) for i in range(3)]
    for n in nodes:
        n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    nodes[2]["metadata"]["annotations"] = {"gpuops.io/admission": "held 2026-12-01"}
    pods = [operand("%s-g0" % app, "g0", app), operand("%s-g1" % app, "g1", app)]
    creating = {"name": "nvidia-device-plugin", "state": {"waiting": {"reason": "ContainerCreating"}}}
    pods[1]["status"] = {"phase": "Pending", "conditions": [], "containerStatuses": [creating]}
    collections = {
        "/api/v1/nodes": nodes,
        NS + "/pods": pods,
        NS + "/events": [SANDBOX_EVENT],
        "/apis/nvidia.com/v1/clusterpolicies": [POLICY],
        "/api/v1/pods": [],
        SLICES: [],
    }
    objects = (
        {NS + "/services/nvidia-dcgm-exporter": {"metadata": {"name": "nvidia-dcgm-exporter"}}} if exporter else {}
    )
    return ReadOnlyApiServer("gpu_validate_report", collections, objects)


HOSTS = {"g%d-host" % i: {"node_name": "g%d" % i, "pool": "h100", "nvidia_gpu": nvml()} for i in range(3)}


def run(server, monkeypatch, tmp_path, check=False, **args):
    args = dict({"hosts": HOSTS, "dest": str(tmp_path / "reports")}, **args)
    return harness.run_module(gpu_validate_report, monkeypatch, args, server=server, check=check)


def test_the_verdict_is_fleet_summary_over_the_full_view_and_only_reads(monkeypatch, tmp_path):
    server = stub_server()
    result = run(server, monkeypatch, tmp_path)
    assert result["_kind"] == "exit", result.get("msg")
    c = server.collections
    view = cluster_view(
        {
            "nodes": c["/api/v1/nodes"],
            "pods": c[NS + "/pods"],
            "cluster_policies": c["/apis/nvidia.com/v1/clusterpolicies"],
            "nvidia_drivers": None,
        }
    )
    expected = fleet_summary(HOSTS, view["nodes"], FleetInputs(sandbox_events=[SANDBOX_EVENT]))
    summary = result["summary"]
    assert [r["verdict"] for r in summary["rows"]] == [r["verdict"] for r in expected["rows"]]
    assert [r["failing_layer"] for r in summary["rows"]] == [r["failing_layer"] for r in expected["rows"]]
    assert summary["rows"] == expected["rows"]
    assert summary["lines"] and result["admission"] is None
    assert result["api_requests"] == len(server.requests)
    assert (NS + "/events", {"fieldSelector": "reason=FailedCreatePodSandBox", "limit": "2000"}) in server.requests
    assert "no runtime for" in " ".join(e for r in summary["rows"] if r["node"] == "g1" for e in r["evidence"])


def test_the_sandbox_events_are_read_only_while_an_operand_waits_for_its_sandbox(monkeypatch, tmp_path):
    server = stub_server()
    server.collections[NS + "/pods"][1]["status"] = {"phase": "Running", "conditions": []}
    result = run(server, monkeypatch, tmp_path)
    assert result["_kind"] == "exit", result.get("msg")
    assert NS + "/events" not in server.paths()


def test_it_writes_the_three_reports_once_and_a_rerun_changes_nothing(monkeypatch, tmp_path):
    first = run(stub_server(), monkeypatch, tmp_path)
    files = [str(tmp_path / "reports" / ("gpu-validate." + ext)) for ext in ("json", "md", "html")]
    assert first["changed"] is True and first["files"] == files and sorted(first["written"]) == sorted(files)
    document = json.loads(Path(files[0]).read_text())
    assert (
        document["generated_at"] == first["generated_at"] and document["report"]["failed"] == first["summary"]["failed"]
    )
    assert first["console"][0].startswith("GPU validation: ")
    assert first["console"][-1] == "reports: " + ", ".join(files)
    second = run(stub_server(), monkeypatch, tmp_path)
    assert second["changed"] is False and second["written"] == []
    assert second["generated_at"] == first["generated_at"], "an unchanged content keeps its timestamp"


def test_it_returns_and_prints_the_operator_names_it_found(monkeypatch, tmp_path):
    result = run(stub_server(), monkeypatch, tmp_path)
    assert result["operator"] == {
        "mode": "clusterpolicy",
        "namespace": "gpu-operator",
        "namespace_source": "cluster_policy",
        "cluster_policy": "cluster-policy",
        "gpu_cluster": None,
        "nvidia_drivers": [],
        "problems": [],
    }
    assert result["console"][1] == "operator: namespace gpu-operator (cluster_policy), ClusterPolicy cluster-policy"


def test_a_cluster_policy_name_that_matches_nothing_fails_before_any_report(monkeypatch, tmp_path):
    result = run(stub_server(), monkeypatch, tmp_path, cluster_policy="gpu-cluster-policy")
    assert result["_kind"] == "fail"
    assert "cluster_policy gpu-cluster-policy matches no ClusterPolicy (found: cluster-policy)" in result["msg"]
    assert not (tmp_path / "reports").exists()


def test_check_mode_writes_nothing_and_says_what_would_change(monkeypatch, tmp_path):
    result = run(stub_server(), monkeypatch, tmp_path, check=True)
    assert result["changed"] is True and result["written"] == []
    assert not (tmp_path / "reports").exists()
    assert result["console"][-1] == "reports: none written in check mode"


def monitoring_evidence(result):
    return [f["evidence"] for r in result["summary"]["rows"] for f in r["findings"] if f["layer"] == "monitoring"]


def test_monitoring_from_endpoints_reads_the_exporter_service_and_its_slices(monkeypatch, tmp_path):
    server = stub_server(exporter=False)
    without = run(server, monkeypatch, tmp_path, monitoring={"source": "endpoints"})
    assert [r["checks"]["monitoring"] for r in without["summary"]["rows"]] == ["fail"] * 3
    assert all("nvidia-dcgm-exporter Service" in e for e in monitoring_evidence(without)), monitoring_evidence(without)
    assert {NS + "/services/nvidia-dcgm-exporter", SLICES} <= set(server.paths())
    with_service = run(stub_server(), monkeypatch, tmp_path, monitoring={"source": "endpoints"})
    assert not any("no nvidia-dcgm-exporter Service" in e for e in monitoring_evidence(with_service))


def test_admission_plans_the_gate_from_the_nodes_records_and_the_reports_carry_it(monkeypatch, tmp_path):
    result = run(stub_server(), monkeypatch, tmp_path, admission={})
    plan = result["admission"]
    assert plan["taint_key"] == "gpuops.io/unvalidated"
    failing = [r["node"] for r in result["summary"]["rows"] if r["verdict"] == "fail"]
    assert sorted(plan["taint"]) == sorted(failing)
    assert result["summary"]["admission"] == plan["report"]
    report = json.loads((tmp_path / "reports" / "gpu-validate.json").read_text())["report"]
    assert report["admission"] == plan["report"]


def test_a_dest_that_is_a_file_fails_naming_it_and_writes_nothing(monkeypatch, tmp_path):
    blocker = tmp_path / "reports"
    blocker.write_text("not a directory")
    result = run(stub_server(), monkeypatch, tmp_path)
    assert result["_kind"] == "fail"
    assert str(blocker) in result["msg"] and "not a directory" in result["msg"]
    assert blocker.read_text() == "not a directory"


def test_a_node_mid_upgrade_fails_the_upgrade_check_and_the_operator_reading_says_why_the_policy_is_not_ready(
    monkeypatch, tmp_path
):
    server = stub_server()
    policy = {
        "metadata": {"name": "gpu-cluster-policy", "labels": {"helm.sh/chart": "gpu-operator-v26.7.0"}},
        "spec": {"driver": {"version": "595.91.07"}},
        "status": {"state": "notReady"},
    }
    server.collections["/apis/nvidia.com/v1/clusterpolicies"] = [policy]
    server.collections["/api/v1/nodes"][0]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = (
        "pod-restart-required"
    )
    server.collections["/api/v1/nodes"][1]["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "580.95.05"
    result = run(server, monkeypatch, tmp_path)
    operator = result["summary"]["policy_status"]
    assert (operator["release"], operator["meaning"], operator["upgrading"]) == ("26.7.0", "upgrading", ["g0"])
    rows = {r["node"]: r for r in result["summary"]["rows"]}
    assert rows["g0"]["checks"]["upgrade"] == "fail" and rows["g0"]["failing_layer"] == "driver"
    assert "pod-restart-required" in rows["g0"]["evidence"][0]
    assert rows["g1"]["checks"]["upgrade"] == "fail"
    assert "runs driver 580.95.05, the operator is set to 595.91.07" in rows["g1"]["evidence"][0]
    assert rows["g2"]["checks"]["upgrade"] == "pass"
    assert "operator state: operator 26.7.0 keeps ClusterPolicy gpu-cluster-policy notReady" in "\n".join(
        result["console"]
    )


def test_check_mode_predicts_the_smoke_verdicts_from_the_last_report_so_it_reports_only_real_changes():
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.run import predicted_smoke

    previous = json.dumps(
        {
            "report": {
                "rows": [{"node": "g0", "smoke": {"status": "passed", "reason": None}}, {"node": "g1", "smoke": None}]
            }
        }
    )
    assert predicted_smoke(None, True, previous) == {"g0": {"status": "passed", "reason": None}}
    assert predicted_smoke(None, False, previous) is None  # a real run without smoke results judges none
    assert predicted_smoke({"g0": {"status": "failed"}}, True, previous) == {"g0": {"status": "failed"}}
    assert predicted_smoke(None, True, None) is None and predicted_smoke(None, True, "not json") is None
