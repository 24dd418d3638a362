"""The admission rulebook (extensions/eda/rulebooks/gpu_node_admission.yml) run by the real ansible-rulebook against
the test bed with the simulated GPU Operator: a GPU node that joins is held by the admission taint, validated and
admitted - even when the API server restarts while the source watches -, a faulty one stays held with its failing
layer routed to its owner, and an Xid warning about a node gives a triage report; each node gets one report.

One rulebook process serves the module (the least-privilege identity, a short debounce); the nodes that joined leave
afterwards and the operator's tolerations are put back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.eda.eda_helpers import Rulebook, audit_mark
from tests.integration.simop_helpers import wait_for

KEY = "gpuops.io/unvalidated"
RECORD = "gpuops.io/admission"
HUNG_NVML = Path(__file__).resolve().parents[2] / "sim" / "nvml" / "profiles" / "init-hangs.yml"
#: One admission run: the operands come up (seconds; at most the 300 s wait when busy), a smoke pod, the verdict.
ADMISSION_TIMEOUT = 420


@pytest.fixture(scope="module")
def rulebook(gpu_operator, testbed, tmp_path_factory):
    op = gpu_operator
    op.wait_healthy(timeout=120)
    tolerations = (op.cp()["spec"].get("daemonsets") or {}).get("tolerations") or []
    op.patch_cp(
        {"daemonsets": {"tolerations": [*tolerations, {"key": KEY, "operator": "Exists", "effect": "NoSchedule"}]}}
    )
    rb = Rulebook(testbed.state_dir, tmp_path_factory.mktemp("eda"))
    # a faulty node's smoke pod cannot schedule: 10 s say so (the role's default waits 60 s); a joining node's operands
    # may take more than the default 120 s to come up on a busy machine (the wait stops as soon as they are up)
    rb.joining = rb.expect(
        "t4", 3, gpu_validate_smoke_schedule_timeout=10, gpu_validate_smoke_timeout=60, gpuops_admit_wait_seconds=300
    )
    # the third joining host's NVML blocks in nvmlInit for 30 s: its read is cut at 3 s
    rb.host_vars(rb.joining[2], gpu_nvml_fixture=str(HUNG_NVML), gpuops_admit_nvml_timeout=3)
    rb.joined = []
    mark = audit_mark(testbed.audit_log)
    rb.start()
    try:
        wait_for(lambda: rb.watching(mark), 120, 0.5, what="the gpu_nodes source watching the nodes")
        yield rb
    finally:
        rb.stop()
        for name in rb.joined:
            op.fault(name, None)
        for _node in rb.joined:
            testbed.cli("leave", "t4")
        for name in rb.joined:
            wait_for(lambda n=name: not op.pods(node=n), 90, what=f"the operand pods of {name} gone")
        op.patch_cp({"daemonsets": {"tolerations": tolerations}})
        op.wait_healthy(timeout=120)


def _taints(op, node):
    return [(t.key, t.effect) for t in op.node(node).spec.taints or []]


def _record(op, node):
    text = (op.node(node).metadata.annotations or {}).get(RECORD)
    return json.loads(text) if text else None


def _join(testbed, rb):
    done = testbed.cli("join", "t4")
    assert done.returncode == 0, done.stderr
    name = done.stdout.strip()
    rb.joined.append(name)
    assert name in rb.joining
    return name


def _reports(rb, node):
    return sorted(p.name for p in rb.reports.glob(f"*{node}*"))


def test_a_node_that_joins_while_the_api_server_restarts_is_held_validated_and_admitted_with_one_report(
    rulebook, gpu_operator, testbed
):
    op, rb = gpu_operator, rulebook
    # the API server goes away under the open watch and comes back; the node joins as soon as it answers, while
    # the source is still reconnecting (its backoff) - the watch resumes from its resourceVersion or lists again
    mark = audit_mark(testbed.audit_log)
    restarted = testbed.cli("restart-apiserver")
    assert restarted.returncode == 0, restarted.stderr
    node = _join(testbed, rb)
    # it joins without the admission taint: the rulebook holds it (the node lifecycle controller may add its own
    # not-ready taint while kwok, reconnecting after the restart, has not yet reported the node Ready)
    assert (KEY, "NoSchedule") not in _taints(op, node)

    wait_for(lambda: (KEY, "NoSchedule") in _taints(op, node), ADMISSION_TIMEOUT, 0.5, what=f"{node} held")
    wait_for(
        lambda: (_record(op, node) or {}).get("state") == "admitted" and _taints(op, node) == [],
        ADMISSION_TIMEOUT,
        1,
        what=f"{node} validated and admitted (rulebook log: {rb.tail(4000)})",
    )
    assert rb.watching(mark)  # the source watches again after the restart
    assert _reports(rb, node) == [f"admission-{node}.{ext}" for ext in ("html", "json", "md")]
    report = json.loads((rb.reports / f"admission-{node}.json").read_text())["report"]
    assert [r["node"] for r in report["rows"]] == [node] and report["rows"][0]["verdict"] == "pass"
    assert report["admission"]["nodes"][node]["state"] == "admitted"
    wait_for(lambda: f"{node}: admitted" in rb.tail(50000), 30, 0.5, what="the outcome in the rulebook's output")


def test_a_faulty_node_stays_held_with_its_layer_routed_to_its_owner(rulebook, gpu_operator, testbed):
    op, rb = gpu_operator, rulebook
    node = _join(testbed, rb)
    op.fault(node, "device-plugin-not-advertising")
    wait_for(
        lambda: (_record(op, node) or {}).get("state") == "held",
        ADMISSION_TIMEOUT,
        1,
        what=f"{node} validated and held (rulebook log: {rb.tail(1500)})",
    )
    assert (KEY, "NoSchedule") in _taints(op, node) and _record(op, node)["layer"] == "device-plugin"
    report = json.loads((rb.reports / f"admission-{node}.json").read_text())["report"]
    assert [(g["owner"], [f["node"] for f in g["failures"]]) for g in report["by_owner"]] == [("platform-team", [node])]
    wait_for(
        lambda: f"{node}: held at layer device-plugin, routed to platform-team" in rb.tail(50000),
        30,
        0.5,
        what="the routed failure in the rulebook's output",
    )


def test_a_node_whose_nvml_hangs_is_held_at_the_driver_layer_once_its_bounded_read_gives_up(
    rulebook, gpu_operator, testbed
):
    op, rb = gpu_operator, rulebook
    node = _join(testbed, rb)
    assert node == rb.joining[2]
    # the read gives up after 3 s, long before the host's NVML would answer; the run goes on without its facts
    wait_for(
        lambda: (_record(op, node) or {}).get("state") == "held",
        ADMISSION_TIMEOUT,
        1,
        what=f"{node} held after its NVML read timed out (rulebook log: {rb.tail(4000)})",
    )
    assert _record(op, node)["layer"] == "driver" and (KEY, "NoSchedule") in _taints(op, node)
    log = rb.tail(50000)
    assert "fatal: [%s]: FAILED!" % node in log and "Timed out after 3 second(s)" in log
    wait_for(lambda: f"{node}: held at layer driver" in rb.tail(50000), 30, 0.5, what="the outcome in the log")


def test_an_xid_warning_about_a_gpu_node_writes_its_triage_report(rulebook, gpu_operator, testbed):
    op, rb = gpu_operator, rulebook
    node = rb.joined[0]
    op.fault(node, "xid79")
    report = rb.reports / f"triage-{node}.json"
    wait_for(report.exists, ADMISSION_TIMEOUT, 1, what=f"the triage report of {node} (rulebook log: {rb.tail(1500)})")
    doc = json.loads(report.read_text())
    assert doc["node"] == node and doc["trigger"]["reasons"] == ["xid"]
    assert "Xid=79" in doc["trigger"]["message"] and doc["summary_lines"]


def test_the_bed_nodes_walked_through_a_driver_restart_under_the_watch_are_not_admitted_again(rulebook, gpu_operator):
    """The fixture's toleration restarted every driver while the source watched: NVIDIA's upgrade controller walked
    each node through its upgrade states, which is no new GPU capability, so no bed node got an admission record."""
    op = gpu_operator
    bed = sorted(set(op.gpu_nodes) - set(rulebook.joined))
    assert bed and {n: _record(op, n) for n in bed} == dict.fromkeys(bed)
