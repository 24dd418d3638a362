"""Foreign quarantine: playbooks/upgrade.yml on the canary test bed while a remediation system (a stand-in that
quarantines a node as NVSentinel does: cordon, taint, annotations, a fatal node condition) or a person holds a node.

The upgrade goes on for the other nodes; the quarantined node is never uncordoned or untainted, only held by the skip
label (the upgrade controller would otherwise upgrade a cordoned node outside its slot limit), counts against
maxUnavailable and is reported apart from failures. foreign_quarantine=fail refuses before any write.
"""

from __future__ import annotations

from canary_helpers import NS, SKIP, STATE, wait_for

from tests.sim import remediation

TARGET = "610.72.01"
HELD = "h100-5"


def _condition(cb, name, kind):
    for c in cb.core.read_node(name).status.conditions or []:
        if c.type == kind:
            return c.status
    return None


def _driver_pod(cb, node):
    pods = cb.core.list_namespaced_pod(NS, label_selector="app.kubernetes.io/component=nvidia-driver").items
    return next((p for p in pods if p.spec.node_name == node and not p.metadata.deletion_timestamp), None)


def test_a_quarantine_taint_the_driver_does_not_tolerate_stops_the_gate_naming_the_pod_and_its_fix(clean):
    remediation.quarantine(clean.core, HELD)
    try:
        # the driver DaemonSet does not want the node (NVSentinel's taint is not tolerated) but its pod stays: once
        # the preparation changes the pod template the DaemonSet counts 19 against 20 pods, and NVIDIA's upgrade
        # controller builds no upgrade state, so no node of the cluster would move
        pod = _driver_pod(clean, HELD).metadata.name
        mark = clean.t.audit_mark()
        r = clean.playbook(gpu_canary_upgrade_driver_version=TARGET)
        assert r.returncode != 0 and "Canary upgrade gate failed" in r.output, r.output[-3000:]
        assert "node %s (taint nvidia.com/gpu-xid-error=true:NoSchedule not tolerated), which it does not" % HELD in (
            r.output
        )
        assert "it wants 19 pod(s) but owns 20, and NVIDIA's upgrade controller builds no upgrade state" in r.output
        assert "kubectl -n %s delete pod %s" % (NS, pod) in r.output
        assert clean.t.audit_writes(mark) == [] and clean.record() is None
    finally:
        remediation.release(clean.core, HELD)


def test_a_node_a_remediation_system_quarantined_is_left_out_untouched_and_reported_apart(clean):
    remediation.quarantine(clean.core, HELD)
    try:
        # the node lifecycle controller taints a cordoned node too: that is the state to keep
        cordon_taint = ("node.kubernetes.io/unschedulable", None, "NoSchedule")
        wait_for(lambda: cordon_taint in clean.snapshot()[HELD]["taints"], 30, what="the cordon's taint")
        # the fix the gate names (previous spec): the driver pod on the quarantined node goes, and its DaemonSet,
        # which no longer wants the node, does not bring it back
        clean.core.delete_namespaced_pod(_driver_pod(clean, HELD).metadata.name, NS)
        wait_for(lambda: _driver_pod(clean, HELD) is None, 60, what="no driver pod on %s" % HELD)
        before = clean.snapshot()
        r = clean.playbook(gpu_canary_upgrade_driver_version=TARGET, gpu_canary_upgrade_waves=["100%"])
        assert r.returncode == 0, r.output[-4000:]
        after = clean.snapshot()
        # every other GPU node moved to the target, through the upgrade controller
        others = [n for n in after if n != HELD]
        assert len(others) == 19
        for n in others:
            assert after[n]["driver"] == TARGET and after[n]["labels"].get(STATE) == "upgrade-done", n
            assert SKIP not in after[n]["labels"] and not after[n]["unschedulable"], n
        # the quarantined node: cordoned and tainted exactly as before, its markers kept, on its old driver, held
        held, was = after[HELD], before[HELD]
        assert held["unschedulable"] and held["taints"] == was["taints"]
        assert ("nvidia.com/gpu-xid-error", "true", "NoSchedule") in held["taints"]
        for key in (remediation.EVENT_ANNOTATION, remediation.CORDONED_ANNOTATION):
            assert held["annotations"][key] == was["annotations"][key], key
        assert _condition(clean, HELD, remediation.CONDITION) == "True"
        assert held["driver"] == was["driver"] != TARGET and clean.driver_pod_version(HELD) is None
        assert held["labels"][SKIP] == "true" and held["labels"].get(STATE) == was["labels"].get(STATE)
        rec = clean.record()
        assert rec["phase"] == "done" and rec["quarantined"] == [HELD]
        assert HELD not in [n for w in rec["waves"] for n in w["nodes"]]
        # reported apart from failures, with the evidence of who holds it, in the plan and in the result
        out = r.output
        assert (
            "Foreign quarantine (left out of the waves, cordon and taints untouched, skip label held): 1 node(s)" in out
        )
        assert "taint nvidia.com/gpu-xid-error=true:NoSchedule [NVSentinel]" in out
        assert "condition SysLogsXIDError=True (SysLogsXIDErrorIsNotHealthy) [NVSentinel]" in out
        assert "Gate: passed" in out
        assert "Left out, quarantined by someone else" in out and "  %s: %s" % (HELD, was["labels"].get(STATE)) in out
        assert "Nothing of a canary upgrade is left on the cluster." in out
    finally:
        remediation.release(clean.core, HELD)
        # released, the DaemonSet wants the node again: its driver pod comes back before the next spec
        wait_for(lambda: _driver_pod(clean, HELD) is not None, 60, what="the driver pod back on %s" % HELD)


def test_foreign_quarantine_fail_refuses_a_plain_foreign_cordon_with_its_evidence_before_any_write(clean):
    clean.core.patch_node(HELD, {"spec": {"unschedulable": True}})
    try:
        mark = clean.t.audit_mark()
        r = clean.playbook(gpu_canary_upgrade_driver_version="610.71.01", gpu_canary_upgrade_foreign_quarantine="fail")
        assert r.returncode != 0
        assert "Canary upgrade gate failed" in r.output, r.output[-3000:]
        assert "node %s is quarantined by someone else (cordon [unknown" % HELD in r.output
        assert clean.t.audit_writes(mark) == []
        assert clean.record() is None
    finally:
        clean.core.patch_node(HELD, {"spec": {"unschedulable": None}})
