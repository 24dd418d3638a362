"""The admission gate's planner: which validated GPU nodes are held (tainted), admitted (untainted) or left alone,
and the record each carries - from the verdict rows and the cluster's view of the nodes, without a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from fleet_fixtures import mixed_fleet, mixed_summary

from ansible_collections.gpuops.gpu_operator.plugins.filter.admission_plan import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_report_json import FilterModule as Json
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.admission import (
    GateOptions,
    admission_plan,
    plan_lines,
    plan_report,
    record_text,
)

KEY = "gpuops.io/unvalidated"
OURS = {"key": KEY, "value": None, "effect": "NoSchedule"}
TODAY = "2026-12-05"
SCHEMA = json.loads((Path(__file__).resolve().parents[5] / "docs" / "validate-report.schema.json").read_text())
admission_filter = FilterModule().filters()["admission_plan"]
report_json = Json().filters()["fleet_report_json"]


def row(node, layer=None, evidence=None, driver="570.124.06"):
    return {
        "node": node,
        "verdict": "fail" if layer else "pass",
        "failing_layer": layer,
        "evidence": [evidence] if evidence else [],
        "driver_version": driver,
    }


def node(taints=(), unschedulable=False, operator_driver=True, mode="extended-resource"):
    operands = {"container-toolkit": {"name": "tk"}, "device-plugin": {"name": "dp"}}
    if operator_driver:
        operands["driver"] = {"name": "drv"}
    return {"taints": list(taints), "unschedulable": unschedulable, "operands": operands, "mode": mode, "deploy": {}}


def plan(rows, nodes, **kw):
    return admission_plan(rows, nodes, GateOptions(KEY, today=TODAY), **kw)


def test_a_failing_node_without_the_taint_is_held_and_one_with_it_stays_held():
    p = plan([row("a", "driver", "driver pod crash-looping"), row("b", "toolkit")], {"a": node(), "b": node([OURS])})
    assert {n: e["action"] for n, e in p["nodes"].items()} == {"a": "hold", "b": "held"}
    assert (p["taint"], p["untaint"]) == (["a"], [])


def test_a_passing_node_with_the_taint_is_admitted_and_one_without_it_stays_admitted():
    p = plan([row("a"), row("b")], {"a": node([OURS]), "b": node()})
    assert {n: e["action"] for n, e in p["nodes"].items()} == {"a": "admit", "b": "admitted"}
    assert (p["taint"], p["untaint"]) == ([], ["a"])


def test_a_cordoned_node_is_left_alone_whatever_its_verdict_and_never_admitted():
    p = plan([row("a"), row("b", "driver")], {"a": node([OURS], unschedulable=True), "b": node(unschedulable=True)})
    assert {n: (e["action"], e["reason"]) for n, e in p["nodes"].items()} == {
        "a": ("left_alone", "cordoned (spec.unschedulable)"),
        "b": ("left_alone", "cordoned (spec.unschedulable)"),
    }
    assert (p["taint"], p["untaint"], p["annotate"]) == ([], [], {})


def test_a_node_tainted_by_someone_else_is_left_alone_naming_the_taint():
    maint = {"key": "example.com/maintenance", "value": "disk", "effect": "NoExecute"}
    p = plan([row("a")], {"a": node([OURS, maint])})
    assert p["nodes"]["a"]["action"] == "left_alone"
    assert p["nodes"]["a"]["reason"] == "tainted by someone else: example.com/maintenance=disk:NoExecute"
    assert p["untaint"] == []


def test_the_gpu_nodes_own_taint_and_a_prefer_no_schedule_taint_do_not_count_as_someone_elses():
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    soft = {"key": "example.com/spot", "value": None, "effect": "PreferNoSchedule"}
    p = plan([row("a")], {"a": node([OURS, gpu, soft])})
    assert p["nodes"]["a"]["action"] == "admit"
    assert p["nodes"]["a"]["record"]["checked"]["taints"] == ["nvidia.com/gpu=present:NoSchedule"]


def test_a_node_the_cluster_does_not_know_is_not_in_the_plan():
    p = plan([row("gone", "node")], {})
    assert p["nodes"] == {} and plan_lines(p) == [
        "admission (gpuops.io/unvalidated): no validated node the cluster knows"
    ]


def test_a_held_node_records_its_layer_evidence_driver_and_runtime():
    p = plan([row("a", "driver", "x" * 500)], {"a": node(operator_driver=False, mode="dra")})
    record = p["nodes"]["a"]["record"]
    assert record == {
        "v": 1,
        "state": "held",
        "layer": "driver",
        "evidence": "x" * 200,
        "driver": {"strategy": "preinstalled", "version": "570.124.06"},
        "runtime": {"toolkit": "operator", "mode": "dra", "injection": None, "cdi": None},
        "checked": {"labels": ["nvidia.com/gpu.present"], "taints": []},
        "passed": None,
    }
    assert json.loads(p["annotate"]["a"]) == record and " " not in p["annotate"]["a"]


def test_the_record_says_how_the_toolkit_injects_gpus_and_whether_cdi_is_on():
    runtime = {"injection": "nri-plugin", "cdi": True}
    p = admission_plan([row("a")], {"a": node()}, GateOptions(KEY, today=TODAY), cluster_runtime=runtime)
    assert p["nodes"]["a"]["record"]["runtime"] == {
        "toolkit": "operator",
        "mode": "extended-resource",
        "injection": "nri-plugin",
        "cdi": True,
    }


def test_a_pass_records_the_date_and_a_later_failure_keeps_it():
    passed = plan([row("a")], {"a": node()})["annotate"]["a"]
    assert json.loads(passed)["passed"] == TODAY and json.loads(passed)["driver"]["strategy"] == "operator"
    failed = admission_plan([row("a", "mig")], {"a": node()}, GateOptions(KEY, today="2026-12-09"), {"a": passed})
    assert json.loads(failed["annotate"]["a"])["passed"] == TODAY


def test_an_unchanged_record_is_not_written_again():
    first = plan([row("a", "toolkit", "no runtime")], {"a": node()})
    again = plan([row("a", "toolkit", "no runtime")], {"a": node([OURS])}, annotations=first["annotate"])
    assert again["annotate"] == {} and again["taint"] == []
    assert record_text(again["nodes"]["a"]["record"]) == first["annotate"]["a"]


def test_an_unreadable_or_other_version_record_is_replaced():
    p = plan([row("a", "driver")], {"a": node()}, annotations={"a": '{"v": 0, "passed": "2020-01-01"}'})
    assert json.loads(p["annotate"]["a"])["passed"] is None


def test_the_lines_count_each_action_and_name_every_node_not_plainly_admitted():
    p = plan([row("a"), row("b", "driver"), row("c")], {"a": node(), "b": node(), "c": node(unschedulable=True)})
    assert plan_lines(p) == [
        "admission (gpuops.io/unvalidated): 1 hold, 1 admitted, 1 left alone",
        "b: hold (add the taint) - fails at layer driver",
        "c: left alone - cordoned (spec.unschedulable)",
    ]


def test_the_filter_reads_the_records_from_the_node_objects_and_the_report_follows_the_schema():
    hosts, nodes = mixed_fleet()
    summary = mixed_summary()
    failing = next(r["node"] for r in summary["rows"] if r["verdict"] == "fail")
    policy = {"cdi": {"enabled": True, "nri_plugin": False}}
    first = admission_filter(summary, nodes, today=TODAY, cluster_policy=policy)
    assert first["nodes"][failing]["record"]["runtime"]["cdi"] is True
    assert failing in first["taint"] and first["lines"][0].startswith("admission (gpuops.io/unvalidated): ")
    objects = [
        {"metadata": {"name": n, "annotations": {"gpuops.io/admission": t}}} for n, t in first["annotate"].items()
    ]
    again = admission_filter(summary, nodes, node_objects=objects, today=TODAY, cluster_policy=policy)
    assert again["annotate"] == {}
    document = json.loads(report_json(dict(summary, admission=first["report"]), generated="2026-12-05T00:00:00Z"))
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert sorted(document["report"]["admission"]) == ["counts", "nodes", "taint_key"]


def test_the_report_carries_where_the_run_leaves_each_node_so_the_next_run_writes_the_same_report():
    rows = [row("a"), row("b", "driver"), row("c")]
    first = plan(rows, {"a": node([OURS]), "b": node(), "c": node(unschedulable=True)})
    assert [first["nodes"][n]["action"] for n in "abc"] == ["admit", "hold", "left_alone"]
    # the next run finds a untainted and b tainted, as this one left them
    again = plan(rows, {"a": node(), "b": node([OURS]), "c": node(unschedulable=True)})
    assert [again["nodes"][n]["action"] for n in "abc"] == ["admitted", "held", "left_alone"]
    report = plan_report(first)
    assert report == plan_report(again)
    assert {n: e["state"] for n, e in report["nodes"].items()} == {"a": "admitted", "b": "held", "c": "left_alone"}
    assert report["counts"] == {"held": 1, "admitted": 1, "left_alone": 1}
