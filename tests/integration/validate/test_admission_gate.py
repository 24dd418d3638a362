"""gpu_validate's admission gate on the test bed with the simulated GPU Operator: an unproven node is held by the
admission taint with its layer in the admission record, a proven one is admitted, a node someone else tainted is left
alone, check mode writes nothing, and the reports group the failures by owner.

The play runs as the least-privilege identity with gpu_validate_admission on and gpu_validate_fail_on=never; the
fixture removes the admission taints, records and foreign taints and heals the nodes afterwards.
"""

from __future__ import annotations

import datetime
import json

import pytest

from tests.integration.simop_helpers import wait_for

KEY = "gpuops.io/unvalidated"
RECORD = "gpuops.io/admission"
FOREIGN = {"key": "example.com/maintenance", "value": "disk", "effect": "NoSchedule"}
#: The default routes of the layers a node stops at on this bed.
DEFAULT_OWNERS = {
    "driver": "node-os-team",
    "toolkit": "node-os-team",
    "device-plugin": "platform-team",
    "scheduling": "platform-team",
    "workload": "platform-team",
}
GATE = {"gpu_validate_admission": True, "gpu_validate_fail_on": "never"}


@pytest.fixture(scope="module")
def gated(gpu_operator):
    """(a MIG-capable H100 node, the other H100 node, the T4 node); the operands tolerate the admission taint as the
    install role's fleet taints make them (the ClusterPolicy's daemonsets.tolerations)."""
    op = gpu_operator
    op.wait_healthy(timeout=120)
    tolerations = (op.cp()["spec"].get("daemonsets") or {}).get("tolerations") or []
    drivers = op.driver_generations()
    op.patch_cp(
        {"daemonsets": {"tolerations": [*tolerations, {"key": KEY, "operator": "Exists", "effect": "NoSchedule"}]}}
    )
    # a new toleration changes the driver's pod template: NVIDIA's upgrade controller restarts every driver
    op.wait_settled(drivers)
    a, b = sorted(n for n in op.gpu_nodes if op.node(n).metadata.labels.get("nvidia.com/mig.capable") == "true")[:2]
    t4 = sorted(set(op.gpu_nodes) - {a, b})[0]
    yield a, b, t4
    for n in op.gpu_nodes:
        op.fault(n, None)
        op.core.patch_node(n, {"metadata": {"annotations": {RECORD: None}}, "spec": {"taints": None}})
    drivers = op.driver_generations()
    op.patch_cp({"daemonsets": {"tolerations": tolerations}})
    op.wait_settled(drivers)


def _taints(op, node):
    return [(t.key, t.effect) for t in op.node(node).spec.taints or []]


def _record(op, node):
    text = (op.node(node).metadata.annotations or {}).get(RECORD)
    return json.loads(text) if text else None


def _node_writes(testbed, mark):
    return [e for e in testbed.audit_writes(mark) if e.get("objectRef", {}).get("resource") == "nodes"]


def test_a_failing_node_is_held_a_proven_one_admitted_and_a_foreign_taint_left_alone(
    validate, gpu_operator, testbed, gated
):
    op = gpu_operator
    a, b, t4 = gated
    # a joined held (as a node registered with the taint would); b is under someone else's maintenance; t4 is broken
    op.core.patch_node(a, {"spec": {"taints": [{"key": KEY, "effect": "NoSchedule"}]}})
    op.core.patch_node(b, {"spec": {"taints": [FOREIGN]}})
    op.fault(t4, "device-plugin-not-advertising")
    wait_for(lambda: op.alloc(t4) == "0", 60, what="t4 advertises nothing")
    rc, report, out = validate.run(**GATE)
    assert rc == 0, out[-3000:]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")

    assert _taints(op, a) == [] and _record(op, a)["state"] == "admitted" and _record(op, a)["passed"] == today
    assert (KEY, "NoSchedule") in _taints(op, t4)
    held = _record(op, t4)
    assert (held["v"], held["state"], held["layer"], held["passed"]) == (1, "held", "device-plugin", None)
    assert "nvidia.com/gpu=0 but NVML counts 1 GPUs" in held["evidence"]
    assert held["driver"]["strategy"] in ("operator", "preinstalled") and held["driver"]["version"]
    assert _taints(op, b) == [("example.com/maintenance", "NoSchedule")] and _record(op, b) is None

    gate = report["admission"]
    assert {n: gate["nodes"][n]["state"] for n in (a, b, t4)} == {a: "admitted", b: "left_alone", t4: "held"}
    assert gate["nodes"][b]["reason"] == "tainted by someone else: example.com/maintenance=disk:NoSchedule"
    assert f"{b}: left alone - tainted by someone else" in out and f"{t4}: hold (add the taint)" in out

    # the reports group the failures by owner: t4's device plugin is the platform team's; b (its operands kept off by
    # the foreign taint) goes to the owner of whichever layer it stops at
    owners = {f["node"]: (g["owner"], f["layer"]) for g in report["by_owner"] for f in g["failures"]}
    assert owners[t4] == ("platform-team", "device-plugin") and set(owners) == {b, t4}
    assert owners[b][1] == gate["nodes"][b]["layer"] and owners[b][0] == DEFAULT_OWNERS[owners[b][1]]
    assert all(f["command"] for g in report["by_owner"] for f in g["failures"])
    md = (validate.workdir / ("run-%d" % validate.runs) / "gpu-validate.md").read_text()
    assert "\n## Failures by owner\n" in md and f"- **{t4}** at device-plugin: " in md
    html = (validate.workdir / ("run-%d" % validate.runs) / "gpu-validate.html").read_text()
    assert 'data-owner="platform-team"' in html

    # a second run writes no node: the held node stays held with the same record
    mark = testbed.audit_mark()
    rc, report, out = validate.run(**GATE)
    assert rc == 0, out[-3000:]
    assert _node_writes(testbed, mark) == []
    assert report["admission"] == gate  # where the first run left every node

    # t4 repaired: the next run admits it
    op.fault(t4, None)
    wait_for(lambda: op.alloc(t4) == "1", 60, what="t4 advertises its GPU again")
    rc, report, out = validate.run(**GATE)
    assert rc == 0, out[-3000:]
    assert (KEY, "NoSchedule") not in _taints(op, t4)
    assert _record(op, t4)["state"] == "admitted" and _record(op, t4)["passed"] == today
    assert report["admission"]["nodes"][b]["state"] == "left_alone"


def test_check_mode_shows_who_would_be_held_or_admitted_and_writes_nothing(validate, gpu_operator, testbed, gated):
    op = gpu_operator
    a, _b, t4 = gated
    op.core.patch_node(a, {"spec": {"taints": [{"key": KEY, "effect": "NoSchedule"}]}})
    op.core.patch_node(t4, {"spec": {"taints": None}, "metadata": {"annotations": {RECORD: None}}})
    op.core.patch_node(t4, {"spec": {"unschedulable": True}})
    try:
        mark = testbed.audit_mark()
        rc, _report, out = validate.run(check=True, **GATE)
        assert rc == 0, out[-3000:]
        assert testbed.audit_writes(mark) == []
        assert f"{a}: admit (remove the taint) - passed every layer" in out
        assert f"{t4}: left alone - cordoned (spec.unschedulable)" in out
        assert "check mode: no taint or admission record is written" in out
        assert (KEY, "NoSchedule") in _taints(op, a)
    finally:
        op.core.patch_node(t4, {"spec": {"unschedulable": None}})


def test_a_new_node_joins_held_and_is_admitted_once_it_passes(validate, gpu_operator, testbed, gated):
    op = gpu_operator
    joined = testbed.cli("join", "t4", "--taint", f"{KEY}:NoSchedule")
    assert joined.returncode == 0, joined.stderr
    new = joined.stdout.strip()
    try:
        assert new == "t4-1" and (KEY, "NoSchedule") in _taints(op, new)
        validate.inventory.write_text(testbed.cli("inventory").stdout)
        # the operands tolerate the admission taint: the held node gets its GPU stack
        wait_for(lambda: op.alloc(new) == "1", 90, what=f"{new} advertises its GPU")
        rc, report, out = validate.run(**GATE)
        assert rc == 0, out[-3000:]
        assert report["admission"]["nodes"][new]["state"] == "admitted", out[-3000:]
        assert f"{new}: admit (remove the taint) - passed every layer" in out
        assert (KEY, "NoSchedule") not in _taints(op, new) and _record(op, new)["state"] == "admitted"
    finally:
        left = testbed.cli("leave", "t4")
        validate.inventory.write_text(testbed.cli("inventory").stdout)
        assert left.returncode == 0 and left.stdout.strip() == new, left.stderr
        # the garbage collector removes the operand pods of the deleted node, so later specs see the bed as it was
        wait_for(lambda: not op.pods(node=new), 90, what=f"the operand pods of {new} gone")
