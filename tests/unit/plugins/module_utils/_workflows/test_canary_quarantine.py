"""Specs for foreign quarantine: nodes a remediation system or a person took out of service are left out of the canary
waves, never uncordoned or untainted, counted against maxUnavailable and reported apart from failures."""

import pytest
from test_canary import NAMES, FakeAPI, record, run_module

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    CONTROLLER_CORDON_STATES,
    REMEDIATION_MARKERS,
    UNKNOWN_OWNER,
    evidence_text,
    markers,
    quarantine_evidence,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import CanaryAbort, PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import IN_PROGRESS_WAITS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.quarantine import (
    budget,
    failures,
    max_unavailable,
    quarantined,
    set_aside,
)

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
XID_TAINT = {"key": "nvidia.com/gpu-xid-error", "value": "true", "effect": "NoSchedule"}


def gpu_node(name, state="upgrade-done", unschedulable=False, taints=(), annotations=None, conditions=()):
    return {
        "metadata": {
            "name": name,
            "labels": {"feature.node.kubernetes.io/pci-10de.present": "true", STATE: state},
            "annotations": dict(annotations or {}),
        },
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": "True"}] + list(conditions)},
    }


def nvsentinel(node):
    """What NVSentinel's fault quarantine leaves on a node: cordon, taint, annotations, a fatal condition."""
    node["spec"]["unschedulable"] = True
    node["spec"]["taints"] = [dict(XID_TAINT)]
    node["metadata"]["annotations"].update(
        {"quarantineHealthEvent": "[...]", "quarantineHealthEventIsCordoned": "True"}
    )
    node["status"]["conditions"].append(
        {"type": "SysLogsXIDError", "status": "True", "reason": "SysLogsXIDErrorIsNotHealthy", "message": "Xid 79"}
    )
    return node


# ---------------------------------------------------------------------------------------------- evidence


def test_a_remediation_systems_node_carries_its_evidence_taint_annotation_condition_and_cordon():
    evidence = quarantine_evidence(nvsentinel(gpu_node("h-2")), markers())
    assert [(e["kind"], e["key"], e["owner"]) for e in evidence] == [
        ("annotation", "quarantineHealthEvent", "NVSentinel"),
        ("annotation", "quarantineHealthEventIsCordoned", "NVSentinel"),
        ("taint", "nvidia.com/gpu-xid-error", "NVSentinel"),
        ("condition", "SysLogsXIDError", "NVSentinel"),
        ("cordon", "spec.unschedulable", "NVSentinel"),
    ]
    assert "taint nvidia.com/gpu-xid-error=true:NoSchedule [NVSentinel]" in evidence_text(evidence)
    assert "condition SysLogsXIDError=True (SysLogsXIDErrorIsNotHealthy) [NVSentinel]" in evidence_text(evidence)


def test_a_plain_cordon_is_foreign_with_an_unknown_owner_but_the_upgrade_controllers_cordon_is_not():
    assert quarantine_evidence(gpu_node("n", unschedulable=True), markers()) == [
        {"kind": "cordon", "key": "spec.unschedulable", "owner": UNKNOWN_OWNER}
    ]
    for state in sorted(CONTROLLER_CORDON_STATES):
        assert quarantine_evidence(gpu_node("n", state, unschedulable=True), markers()) == [], state
    # a condition that is not True, and a healthy node, are no evidence
    healthy = gpu_node("n", conditions=[{"type": "SysLogsXIDError", "status": "False"}])
    assert quarantine_evidence(healthy, markers()) == []


def test_the_controllers_cordon_states_are_the_in_progress_states_and_upgrade_failed():
    assert set(IN_PROGRESS_WAITS) | {"upgrade-failed"} == CONTROLLER_CORDON_STATES


def test_more_markers_are_data_and_a_bad_one_names_the_fix():
    extra = [{"kind": "taint", "key": "example.com/remediation", "owner": "our-remediator"}]
    node = gpu_node("n", taints=[{"key": "example.com/remediation", "effect": "NoExecute"}])
    assert quarantine_evidence(node, markers()) == []
    assert [e["owner"] for e in quarantine_evidence(node, markers(extra))] == ["our-remediator"]
    assert {m["kind"] for m in REMEDIATION_MARKERS} == {"taint", "annotation", "condition"}
    with pytest.raises(ArgumentError, match=r"quarantine_markers\[0\].*kind"):
        markers([{"kind": "label", "key": "x"}])


# ---------------------------------------------------------------------------------------------- budget and gate


@pytest.mark.parametrize("value,total,count", [("25%", 20, 5), ("25%", 6, 2), (1, 6, 1), ("3", 6, 3), ("100%", 6, 6)])
def test_max_unavailable_is_a_count_or_a_percentage_rounded_up(value, total, count):
    assert max_unavailable(value, total) == count


def test_a_bad_max_unavailable_names_the_fix():
    with pytest.raises(PlanError, match="maxUnavailable is 'half'"):
        max_unavailable("half", 4)


def test_cordoned_quarantined_nodes_use_the_budget_a_tainted_schedulable_one_does_not():
    nodes = [gpu_node("a"), nvsentinel(gpu_node("b")), gpu_node("c", taints=[XID_TAINT]), gpu_node("d")]
    found = quarantined(nodes, markers())
    assert sorted(found) == ["b", "c"]
    cp = {"spec": {"driver": {"upgradePolicy": {"maxUnavailable": "25%"}}}}
    assert budget(nodes, found, cp, {"autoUpgrade": True}) == {
        "max_unavailable": "25%",
        "gpu_nodes": 4,
        "allowed": 1,
        "used_by_quarantine": ["b"],
        "left": 0,
    }
    # the budget the run sets wins over the ClusterPolicy's
    assert budget(nodes, found, cp, {"maxUnavailable": 2})["left"] == 1


def test_skip_fails_only_on_a_used_up_budget_and_fail_refuses_every_quarantined_node_not_excluded():
    nodes = [gpu_node("a"), nvsentinel(gpu_node("b")), gpu_node("c", unschedulable=True)]
    found = quarantined(nodes, markers())
    roomy = budget(nodes, found, None, {"maxUnavailable": 3})
    assert failures(found, roomy, "skip", ["a"]) == []
    full = budget(nodes, found, None, {"maxUnavailable": 2})
    [why] = failures(found, full, "skip", ["a"])
    assert "b, c use the whole maxUnavailable" in why and "raise upgrade_policy.maxUnavailable above 2" in why
    assert failures(found, full, "skip", []) == []  # nothing left to move
    refused = failures(found, roomy, "fail", ["a"], exclude=["c"])
    assert len(refused) == 1 and refused[0].startswith("node b is quarantined by someone else (annotation")


def test_a_resumed_record_sets_aside_nodes_quarantined_since_only_from_waves_not_started():
    rec = {
        "waves": [
            {"index": 0, "nodes": ["a", "b"], "status": "upgrading", "released": "t"},
            {"index": 1, "nodes": ["c", "d"], "status": "pending"},
        ],
        "quarantined": ["x"],
    }
    assert set_aside(rec, {"b": [], "c": []}) == ["c"]
    assert [w["nodes"] for w in rec["waves"]] == [["a", "b"], ["d"]]
    assert rec["quarantined"] == ["c", "x"]


# ---------------------------------------------------------------------------------------------- the whole run


def test_a_quarantined_node_is_left_out_held_and_untouched_through_the_whole_upgrade():
    api = FakeAPI(NAMES)
    nvsentinel(api.nodes["h-2"])
    taints = list(api.nodes["h-2"]["spec"]["taints"])
    plan = run_module(api, step="plan", upgrade_policy={"autoUpgrade": True, "maxUnavailable": 2})["plan"]
    assert plan["gate"]["passed"], plan["gate"]["failures"]
    assert "h-2" not in [n for w in plan["waves"] for n in w["nodes"]] and "h-2" not in plan["excluded"]
    [entry] = plan["foreign_quarantine"]
    assert entry["node"] == "h-2" and entry["owners"] == ["NVSentinel"] and entry["counts_against_max_unavailable"]
    assert plan["budget"]["used_by_quarantine"] == ["h-2"] and plan["budget"]["left"] == 1
    run_module(api, step="prepare")
    assert api.nodes["h-2"]["metadata"]["labels"][SKIP] == "true"  # held: the controller would upgrade a cordoned node
    for index, _wave in enumerate(plan["waves"]):
        run_module(api, step="wave", wave=index, poll_interval=0.5)
        run_module(api, step="finish_wave", wave=index)
    assert record(api)["phase"] == "done" and record(api)["quarantined"] == ["h-2"]
    node = api.nodes["h-2"]
    assert node["spec"]["unschedulable"] is True and node["spec"]["taints"] == taints
    assert node["metadata"]["labels"][SKIP] == "true" and node["metadata"]["labels"][STATE] == "upgrade-required"
    assert [what for _method, path, what in api.writes if path.endswith("/h-2")] == [
        "node h-2: hold the upgrade (skip label)"
    ]
    status = run_module(api, step="status")["status"]
    assert status["foreign_quarantine"]["h-2"]["cordoned"] and status["foreign_quarantine"]["h-2"]["skip"]
    assert [e["kind"] for e in status["foreign_quarantine"]["h-2"]["evidence"]][-1] == "cordon"
    assert any(line.startswith("Left out, quarantined by someone else") for line in status["lines"])
    assert "h-2" not in status["nodes"], "listed apart from the upgraded nodes"


def test_the_refuse_option_stops_prepare_before_any_write_and_names_the_evidence():
    api = FakeAPI(NAMES)
    api.nodes["h-2"]["spec"]["unschedulable"] = True
    with pytest.raises(CanaryAbort, match="node h-2 is quarantined by someone else \\(cordon \\[unknown"):
        run_module(api, step="prepare", foreign_quarantine="fail")
    assert api.writes == []


def test_a_node_quarantined_between_waves_is_set_aside_when_the_run_resumes_and_the_run_finishes():
    api = FakeAPI(NAMES)
    waves = [1, "100%"]
    assert [w["nodes"] for w in run_module(api, step="plan", waves=waves)["plan"]["waves"]][1] == ["a-1"]
    run_module(api, step="prepare", waves=waves)
    run_module(api, step="wave", wave=0, waves=waves, poll_interval=0.5)
    run_module(api, step="finish_wave", wave=0, waves=waves)
    nvsentinel(api.nodes["a-1"])
    plan = run_module(api, step="prepare", waves=waves)["plan"]
    assert plan["waves"][1]["nodes"] == [] and [q["node"] for q in plan["foreign_quarantine"]] == ["a-1"]
    for index in (1, 2):  # the emptied wave passes through
        run_module(api, step="wave", wave=index, waves=waves, poll_interval=0.5)
        run_module(api, step="finish_wave", wave=index, waves=waves)
    assert record(api)["phase"] == "done" and record(api)["quarantined"] == ["a-1"]
    assert api.nodes["a-1"]["spec"]["unschedulable"] is True
    assert [what for _method, path, what in api.writes if path.endswith("/a-1")] == [
        "node a-1: hold the upgrade (skip label)"
    ]
