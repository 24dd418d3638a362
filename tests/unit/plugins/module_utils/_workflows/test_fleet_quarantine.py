"""Specs for gpu_validate's verdict on a node someone else took out of service: it is named as quarantined, with
its owners, evidence and the fix (leave it to its owner), never as a failure at some layer."""

import json
from pathlib import Path

import jsonschema
from fleet_fixtures import node, nvml

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_console import fleet_console
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import node_view
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
    should_fail,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report import (
    summary_lines,
    summary_markdown,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report_json import (
    report_document,
)

SCHEMA = json.loads((Path(__file__).resolve().parents[5] / "docs" / "validate-report.schema.json").read_text())


def raw_node(name, unschedulable=False, taints=(), annotations=None, conditions=()):
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}, "annotations": annotations or {}},
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": "True"}] + list(conditions)},
    }


def fleet(quarantine_of):
    """Three h100 nodes: h100-0 healthy, h100-1 held by NVSentinel (and its smoke pod Pending, as on a cordoned
    node), h100-2 cordoned by someone unknown. ``quarantine_of`` gives each node view's evidence."""
    hosts, nodes = {}, {}
    for i in range(3):
        name = "h100-%d" % i
        hosts[name] = {"node_name": name, "pool": "h100", "nvidia_gpu": nvml()}
        nodes[name] = dict(node("h100"), quarantine=quarantine_of(name))
    smoke = {n: {"status": "passed", "reason": None} for n in nodes}
    smoke["h100-1"] = {"status": "failed", "reason": "Pending: 0/3 nodes are available: 1 node(s) were unschedulable"}
    return fleet_summary(hosts, nodes, FleetInputs(smoke=smoke))


def evidence_of(name):
    nvsentinel = raw_node(
        name,
        unschedulable=True,
        taints=[{"key": "nvidia.com/gpu-xid-error", "value": "true", "effect": "NoSchedule"}],
        annotations={"quarantineHealthEvent": "{...}"},
        conditions=[{"type": "GpuMemWatch", "status": "True", "reason": "GpuMemWatchIsNotHealthy"}],
    )
    raw = {"h100-0": raw_node(name), "h100-1": nvsentinel, "h100-2": raw_node(name, unschedulable=True)}[name]
    return node_view(raw)["quarantine"]


def test_a_quarantined_node_has_its_own_verdict_with_owners_evidence_and_fix_not_a_failing_layer():
    summary = fleet(evidence_of)
    rows = {r["node"]: r for r in summary["rows"]}
    held = rows["h100-1"]
    assert held["verdict"] == "quarantined" and held["failing_layer"] is None
    assert held["quarantine"]["owners"] == ["NVSentinel"]
    assert [e["kind"] for e in held["quarantine"]["evidence"]] == ["annotation", "taint", "condition", "cordon"]
    assert held["evidence"][0].startswith("annotation quarantineHealthEvent [NVSentinel], taint nvidia.com/gpu-xid")
    assert "NVSentinel owns the node: leave it to it" in held["quarantine"]["fix"]
    assert [f["check"] for f in held["findings"]] == ["smoke"]  # still shown, never the verdict
    cordoned = rows["h100-2"]
    assert cordoned["verdict"] == "quarantined" and cordoned["quarantine"]["owners"][0].startswith("unknown")
    assert "find out who" in cordoned["quarantine"]["fix"]
    assert rows["h100-0"]["verdict"] == "pass" and rows["h100-0"]["quarantine"] is None
    assert (summary["passed"], summary["failed"], summary["quarantined"]) == (1, 0, 2)
    assert summary["failed_by_layer"] == {} and summary["by_owner"] == []


def test_quarantined_nodes_never_fail_the_play_and_every_report_names_them_apart():
    summary = fleet(evidence_of)
    assert should_fail(summary, "any") is None
    assert summary_lines(summary)[-1] == "1 passed, 0 failed, 2 quarantined by someone else (their owners act on them)"
    markdown = summary_markdown(summary)
    assert "## Foreign quarantine" in markdown and "- **h100-1** held by NVSentinel:" in markdown
    console = fleet_console(summary)
    assert console[0] == "GPU validation: 1 passed, 0 failed of 3 GPU nodes, 2 quarantined by someone else"
    assert any(
        line.startswith("QUARANTINED h100-1 by NVSentinel: annotation quarantineHealthEvent") for line in console
    )
    jsonschema.validate(report_document(summary), SCHEMA)


def test_without_quarantine_evidence_the_same_node_is_a_failure_at_its_layer():
    summary = fleet(lambda name: [])
    held = {r["node"]: r for r in summary["rows"]}["h100-1"]
    assert held["verdict"] == "fail" and held["failing_layer"] == "workload"
