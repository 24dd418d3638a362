"""The gpu_nodes event source (extensions/eda/plugins/event_source/gpu_nodes.py), offline: its watches run against a
scripted stand-in for the kubernetes client (pages, watch lines, errors), so every spec here says what the source asks
the API server and what it puts on the queue."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[4] / "extensions" / "eda" / "plugins" / "event_source" / "gpu_nodes.py"
_spec = importlib.util.spec_from_file_location("gpu_nodes_source", PATH)
src = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(src)

KEY = "gpuops.io/unvalidated"
RECORD = "gpuops.io/admission"
ARGS = {**src.DEFAULTS, "debounce": 5, "max_delay": 30}


def node(name, rv="1", gpus="8", labels=None, record=None, taints=(), conditions=()):
    return {
        "metadata": {
            "name": name,
            "resourceVersion": rv,
            "labels": {"nvidia.com/gpu.present": "true", **(labels or {})},
            "annotations": {RECORD: record} if record else {},
        },
        "spec": {"taints": [{"key": k, "effect": "NoSchedule"} for k in taints]},
        "status": {
            "allocatable": {"nvidia.com/gpu": gpus},
            "capacity": {"nvidia.com/gpu": gpus},
            "conditions": list(conditions),
        },
    }


def page(items, rv, cont=None):
    return {"items": items, "metadata": {"resourceVersion": rv, **({"continue": cont} if cont else {})}}


def line(kind, obj):
    return json.dumps({"type": kind, "object": obj})


def bookmark(rv):
    return line("BOOKMARK", {"kind": "Node", "metadata": {"resourceVersion": rv}})


def gone():
    return line("ERROR", {"kind": "Status", "code": 410, "message": "too old resource version: 5 (20)"})


class Script:
    """A stand-in for one resource's list/watch call: each request takes the next step (a page dict, a list of
    watch lines, or an exception to raise); when the script ends it stops the watch."""

    def __init__(self, steps, stop, endless=False):
        self.steps, self.stop, self.endless, self.requests = list(steps), stop, endless, []

    def __call__(self, **kw):
        self.requests.append(kw)
        if not self.steps:
            if self.endless:  # an idle watch that ends after a while, as a server-side timeout ends one
                time.sleep(0.02)
            else:
                self.stop.set()
            return iter(())
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run_watch(steps, deliver=None, args=ARGS, selectors=None):
    """Run one Watch over ``steps`` to the end; returns (script, delivered results, sleeps)."""
    stop = threading.Event()
    script = Script(steps, stop)
    got, sleeps = [], []
    watch = src.Watch(
        "nodes",
        script,
        deliver or (lambda kind, payload: got.append((kind, payload))),
        stop,
        args,
        selectors or {"label_selector": "feature.node.kubernetes.io/pci-10de.present=true"},
        sleep=sleeps.append,
    )
    watch.backoff.rand = lambda: 1.0  # the ceiling of each jittered delay
    watch.run()
    return script, got, sleeps, watch


def tracked(initial="unadmitted"):
    clock = Clock()
    coalescer = src.Coalescer(ARGS["debounce"], ARGS["max_delay"], clock)
    return src.Tracker({**ARGS, "initial": initial}, coalescer), coalescer, clock


def due_after(coalescer, clock, seconds):
    clock.now += seconds
    return coalescer.due()


# ------------------------------------------------------------------------------------------ the watch


def test_it_lists_then_watches_from_the_lists_version_with_bookmarks_and_the_label_selector_server_side():
    script, got, sleeps, watch = run_watch(
        [page([node("a")], "10"), [bookmark("12")], [line("ADDED", node("b", "13"))]]
    )
    first_list, first_watch, resumed = script.requests[:3]
    assert first_list["label_selector"] == "feature.node.kubernetes.io/pci-10de.present=true"
    assert first_list.get("watch") is None and first_list["limit"] == 500
    assert first_watch["watch"] is True and first_watch["allow_watch_bookmarks"] is True
    assert first_watch["resource_version"] == "10" and first_watch["timeout_seconds"] == 300
    assert first_watch["label_selector"] == "feature.node.kubernetes.io/pci-10de.present=true"
    # the bookmark moved the version on: the next watch resumes from it, without listing again
    assert resumed["watch"] is True and resumed["resource_version"] == "12"
    assert got == [("LISTED", [node("a")]), ("ADDED", node("b", "13"))] and sleeps == []
    assert watch.rv == "13"


def test_a_list_follows_its_continue_token_across_pages():
    script, got, _sleeps, _w = run_watch([page([node("a")], "9", cont="t1"), page([node("b")], "10")])
    assert script.requests[1]["_continue"] == "t1" and script.requests[2]["resource_version"] == "10"
    assert got == [("LISTED", [node("a"), node("b")])]


def test_a_410_gone_in_the_stream_or_on_the_request_lists_again():
    steps = [
        page([node("a")], "10"),
        [gone()],
        page([node("a"), node("b")], "30"),
        src.SourceError("HTTP 410 Gone", 410),
        page([node("b")], "40"),
    ]
    script, got, sleeps, _w = run_watch(steps)
    assert [k for k, _event in got] == ["LISTED", "LISTED", "LISTED"]
    assert [r.get("resource_version") for r in script.requests if r.get("watch")] == ["10", "30", "40"]
    assert sleeps == []  # a relist is not an error: no backoff


@pytest.mark.parametrize(
    "error",
    [
        src.SourceError("HTTP 429 Too Many Requests", 429),
        src.SourceError("HTTP 503 Service Unavailable", 503),
        src.SourceError("connection: Connection refused"),
    ],
)
def test_errors_back_off_exponentially_up_to_the_bound_then_resume_from_the_last_version(error):
    args = {**ARGS, "backoff_initial": 1, "backoff_max": 8}
    steps = [page([node("a")], "10"), *[error] * 6, [line("MODIFIED", node("a", "11"))]]
    script, got, sleeps, _w = run_watch(steps, args=args)
    assert sleeps == [1, 2, 4, 8, 8, 8]  # full jitter: each delay is at most these (the ceilings, with rand=1)
    assert script.requests[-2]["resource_version"] == "10"  # resumed, not relisted
    assert got[-1] == ("MODIFIED", node("a", "11"))


def test_the_jitter_draws_below_the_ceiling_and_a_retry_after_is_honoured_up_to_the_bound():
    backoff = src.Backoff(1, 30, rand=lambda: 0.25)
    assert [backoff.next() for _attempt in range(3)] == [0.25, 0.5, 1.0]
    assert backoff.next(retry_after=7) == 7 and backoff.next(retry_after=600) == 30
    backoff.reset()
    assert backoff.next() == 0.25


def test_a_success_resets_the_backoff():
    error = src.SourceError("HTTP 500", 500)
    steps = [page([], "1"), error, error, [], error]
    _script, _got, sleeps, _w = run_watch(steps, args={**ARGS, "backoff_initial": 1, "backoff_max": 30})
    assert sleeps == [1, 2, 1]


def test_an_unreadable_line_lists_again_after_a_backoff():
    script, got, sleeps, _w = run_watch([page([], "1"), ["{not json"], page([node("a")], "5")])
    assert [k for k, _event in got] == ["LISTED", "LISTED"] and sleeps == [1.0]


# ------------------------------------------------------------------------------------------ which changes count


def test_a_node_that_appears_during_the_watch_is_announced_once_after_the_debounce():
    tracker, coalescer, clock = tracked()
    tracker.nodes_listed([])
    tracker.node_event("ADDED", node("t4-1", gpus=None, labels={}))
    clock.now += 2
    tracker.node_event("MODIFIED", node("t4-1", gpus="1", labels={"nvidia.com/gpu.product": "Tesla-T4"}))
    assert due_after(coalescer, clock, 4.9) == []  # the last change was 4.9 s ago
    (event,) = due_after(coalescer, clock, 0.2)
    assert event["gpu_node"]["node"] == "t4-1" and event["gpu_node"]["action"] == "admit"
    assert event["gpu_node"]["reasons"] == ["appeared", "capability-changed"]
    assert event["gpu_node"]["capability"]["allocatable"] == "1" and event["gpu_node"]["admission"] is None
    assert due_after(coalescer, clock, 60) == []


def test_a_node_that_keeps_changing_is_announced_at_most_max_delay_after_its_first_change():
    tracker, coalescer, clock = tracked("none")
    tracker.nodes_listed([node("a")])
    for i in range(40):
        clock.now += 1
        tracker.node_event("MODIFIED", node("a", labels={"nvidia.com/gpu.count": str(i)}))
        if coalescer.due():
            break
    assert clock.now == 31  # the first change at 1 s, due at 1 + max_delay


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"labels": {"nvidia.com/mig.config": "all-1g.10gb"}}, "capability-changed"),
        ({"gpus": "7"}, "capability-changed"),
        ({"record": None, "taints": ()}, "admission-record-lost"),
    ],
)
def test_a_known_node_that_changes_gpu_capability_or_loses_its_record_is_announced(change, reason):
    tracker, coalescer, clock = tracked()
    admitted = {"record": json.dumps({"state": "admitted"})}
    tracker.nodes_listed([node("a", **admitted)])
    tracker.node_event("MODIFIED", node("a", **{**admitted, **change}))
    (event,) = due_after(coalescer, clock, 5)
    assert event["gpu_node"]["reasons"] == [reason]


def test_a_held_node_whose_taint_is_removed_by_hand_is_announced_an_admitted_one_is_not():
    tracker, coalescer, clock = tracked()
    held, admitted = json.dumps({"state": "held"}), json.dumps({"state": "admitted"})
    tracker.nodes_listed([node("held", record=held, taints=[KEY]), node("ok", record=held, taints=[KEY])])
    tracker.node_event("MODIFIED", node("held", record=held))
    # the gate admits a node: its record says admitted, then the taint goes
    tracker.node_event("MODIFIED", node("ok", record=admitted, taints=[KEY]))
    tracker.node_event("MODIFIED", node("ok", record=admitted))
    (event,) = due_after(coalescer, clock, 5)
    assert (event["gpu_node"]["node"], event["gpu_node"]["reasons"]) == ("held", ["admission-taint-lost"])


def test_heartbeats_and_the_gates_own_writes_announce_nothing():
    tracker, coalescer, clock = tracked()
    tracker.nodes_listed([node("a", record=json.dumps({"state": "admitted"}))])
    tracker.node_event(
        "MODIFIED", node("a", rv="2", record=json.dumps({"state": "admitted"}), conditions=[{"type": "Ready"}])
    )
    tracker.node_event("MODIFIED", node("a", rv="3", record=json.dumps({"state": "held"}), taints=[KEY]))
    assert due_after(coalescer, clock, 60) == []


def test_gpus_that_go_away_and_come_back_before_the_event_is_due_announce_nothing():
    """A device plugin restart (every driver restart brings one) takes the GPUs off the node for a second; a change
    that is still there when the event is due, or that comes with another reason, is announced."""
    tracker, coalescer, clock = tracked()
    admitted = json.dumps({"state": "admitted"})
    tracker.nodes_listed([node("a", record=admitted), node("b", record=admitted)])
    tracker.node_event("MODIFIED", node("a", rv="2", gpus="0", record=admitted))
    tracker.node_event("MODIFIED", node("a", rv="3", gpus="8", record=admitted))
    tracker.node_event("MODIFIED", node("b", rv="2", gpus="0", record=admitted))
    tracker.node_event("MODIFIED", node("b", rv="3", gpus="8", record=None))
    assert [(e["gpu_node"]["node"], e["gpu_node"]["reasons"]) for e in due_after(coalescer, clock, 60)] == [
        ("b", ["capability-changed", "admission-record-lost"])
    ]
    tracker.node_event("MODIFIED", node("a", rv="4", gpus="7", record=admitted))
    (event,) = due_after(coalescer, clock, 60)
    assert (event["gpu_node"]["node"], event["gpu_node"]["capability"]["allocatable"]) == ("a", "7")


def test_a_driver_upgrade_passing_through_a_node_announces_nothing_until_its_driver_labels_change():
    """NVIDIA's upgrade controller walks every node through its upgrade states whenever the driver's pod template
    changes; a node mid-upgrade is not a new capability (its GPU feature labels change once the new driver runs)."""
    tracker, coalescer, clock = tracked()
    tracker.nodes_listed([node("a", record=json.dumps({"state": "admitted"}))])
    for rv, state in enumerate(["upgrade-required", "cordon-required", "pod-restart-required", "upgrade-done"], 2):
        labels = {"nvidia.com/gpu-driver-upgrade-state": state, "nvidia.com/mig.config.state": "pending"}
        tracker.node_event("MODIFIED", node("a", rv=str(rv), record=json.dumps({"state": "admitted"}), labels=labels))
    assert due_after(coalescer, clock, 60) == []
    tracker.node_event(
        "MODIFIED",
        node("a", rv="9", record=json.dumps({"state": "admitted"}), labels={"nvidia.com/cuda.driver.major": "580"}),
    )
    (event,) = due_after(coalescer, clock, 60)
    assert event["gpu_node"]["reasons"] == ["capability-changed"]


@pytest.mark.parametrize(("initial", "announced"), [("unadmitted", ["new"]), ("all", ["new", "old"]), ("none", [])])
def test_the_first_list_announces_the_nodes_the_initial_argument_names(initial, announced):
    tracker, coalescer, clock = tracked(initial)
    tracker.nodes_listed([node("new"), node("old", record=json.dumps({"state": "admitted"}))])
    assert sorted(e["gpu_node"]["node"] for e in due_after(coalescer, clock, 5)) == announced


def test_a_relist_after_a_gap_announces_what_changed_while_the_watch_was_away_and_forgets_deleted_nodes():
    tracker, coalescer, clock = tracked("none")
    tracker.nodes_listed([node("a"), node("b"), node("c")])
    tracker.node_event("MODIFIED", node("c", gpus="4"))  # pending when c is deleted
    tracker.nodes_listed([node("a"), node("b", gpus="7"), node("d")])
    events = {e["gpu_node"]["node"]: e["gpu_node"]["reasons"] for e in due_after(coalescer, clock, 5)}
    assert events == {"b": ["capability-changed"], "d": ["appeared"]}
    assert set(tracker.nodes) == {"a", "b", "d"}


def test_a_node_deleted_during_its_debounce_is_not_announced():
    tracker, coalescer, clock = tracked()
    tracker.nodes_listed([])
    tracker.node_event("ADDED", node("a"))
    tracker.node_event("DELETED", node("a"))
    assert due_after(coalescer, clock, 5) == []


def test_resource_slice_devices_of_a_known_node_count_as_capability():
    tracker, coalescer, clock = tracked("none")
    tracker.nodes_listed([node("a")])
    tracker.slices_listed([])
    piece = {"metadata": {"uid": "s1"}, "spec": {"nodeName": "a", "devices": [{"name": "gpu-0"}]}}
    tracker.slice_event("ADDED", piece)
    tracker.slice_event("ADDED", {"metadata": {"uid": "s9"}, "spec": {"nodeName": "cpu-0", "devices": [{"name": "x"}]}})
    (event,) = due_after(coalescer, clock, 5)
    assert (event["gpu_node"]["node"], event["gpu_node"]["reasons"]) == ("a", ["capability-changed"])
    tracker.slice_event("MODIFIED", piece)  # same devices
    assert due_after(coalescer, clock, 5) == []


def xid(uid, count=1, node_name="a", reason="XidCriticalError", kind="Warning"):
    return {
        "metadata": {"uid": uid, "resourceVersion": "1"},
        "involvedObject": {"kind": "Node", "name": node_name},
        "type": kind,
        "reason": reason,
        "count": count,
        "message": "XidCriticalError: Xid=79 on Device=GPU-0; marking device as unhealthy.",
    }


def test_a_new_xid_warning_about_a_gpu_node_asks_for_triage_once_and_again_when_it_repeats():
    tracker, coalescer, clock = tracked("none")
    tracker.nodes_listed([node("a")])
    tracker.events_listed([xid("old")])  # history at start: not announced
    tracker.event_event("ADDED", xid("e1"))
    tracker.event_event("MODIFIED", xid("e1"))  # the same occurrence
    tracker.event_event("ADDED", xid("e2", node_name="cpu-0"))  # not a selected GPU node
    tracker.event_event("ADDED", xid("e3", reason="Rebooted"))
    (event,) = due_after(coalescer, clock, 5)
    assert event["gpu_node"]["action"] == "triage" and event["gpu_node"]["node"] == "a"
    assert event["gpu_node"]["reasons"] == ["xid"] and "Xid=79" in event["gpu_node"]["message"]
    tracker.event_event("MODIFIED", xid("e1", count=2))
    assert [e["gpu_node"]["action"] for e in due_after(coalescer, clock, 5)] == ["triage"]


def test_a_relist_of_events_announces_only_the_warnings_not_seen_before():
    tracker, coalescer, clock = tracked("none")
    tracker.nodes_listed([node("a")])
    tracker.events_listed([xid("e1")])
    tracker.events_listed([xid("e1"), xid("e2")])
    (event,) = due_after(coalescer, clock, 5)
    assert event["gpu_node"]["node"] == "a"


# ------------------------------------------------------------------------------------------ the plugin


def test_the_watches_follow_the_arguments():
    stop = threading.Event()
    calls = {"nodes": None, "events": None, "slices": None}

    def names(args):
        return [w.name for w in src.watches({**ARGS, **args}, calls, lambda r: None, stop)]

    assert names({}) == ["nodes", "events"]
    assert names({"watch_events": False, "resource_slices": True}) == ["nodes", "slices"]
    (events,) = [w for w in src.watches(ARGS, calls, lambda r: None, stop) if w.name == "events"]
    assert events.selectors == {"field_selector": "involvedObject.kind=Node,type=Warning"}


def test_main_loop_puts_one_coalesced_event_per_node_on_the_queue():
    """The whole source in its asyncio loop, its watches in threads: a node that appears and changes twice within
    the debounce gives one event; then an Xid warning about it gives a triage event."""

    async def scenario():
        queue = asyncio.Queue()
        never = threading.Event()
        nodes = Script(
            [
                page([], "1"),
                [
                    line("ADDED", node("t4-1", "2", gpus=None)),
                    line("MODIFIED", node("t4-1", "3", gpus="1")),
                    line("MODIFIED", node("t4-1", "4", gpus="1", labels={"nvidia.com/gpu.product": "T4"})),
                ],
            ],
            never,
            endless=True,
        )
        events = Script([page([], "1")], never, endless=True)
        calls = {"nodes": nodes, "events": events, "slices": None}
        task = asyncio.create_task(src.run(queue, {"debounce": 0.2, "max_delay": 5}, calls))
        first = await asyncio.wait_for(queue.get(), 5)
        events.steps.append([line("ADDED", xid("e1", node_name="t4-1"))])
        second = await asyncio.wait_for(queue.get(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return first, second, queue.qsize()

    first, second, left = asyncio.run(scenario())
    assert first["gpu_node"]["action"] == "admit" and first["gpu_node"]["node"] == "t4-1"
    assert first["gpu_node"]["reasons"] == ["appeared", "capability-changed"]
    assert second["gpu_node"]["action"] == "triage" and left == 0
