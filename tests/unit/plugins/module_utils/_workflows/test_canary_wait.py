"""Specs for the canary's waits: watches of what a check listed wake it, a resync every poll bounds it, a client
that cannot watch polls."""

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import (
    UpgradeWait,
    wait_upgraded,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import DRIVER_VERSION_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    CanarySession,
    Pause,
    about,
)

STATE = "nvidia.com/gpu-driver-upgrade-state"
NODES = "/api/v1/nodes"


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0
        self.sleeps = []

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.sleeps.append(round(s, 6))
        self.t += s


def node(name, state="upgrade-required", driver="580.1"):
    return {"kind": "Node", "metadata": {"name": name, "labels": {STATE: state, DRIVER_VERSION_LABEL: driver}}}


class WatchingAPI:
    """Nodes to LIST, each LIST at the next resourceVersion; each watch answers with the next scripted outcome:
    a list of events (the stream, ended by the server's timeout) or a K8sError. Records the watches."""

    def __init__(self, nodes, *outcomes):
        self.nodes = nodes
        self.outcomes = list(outcomes)
        self.listed = {}
        self.watches = []
        self.version = 0

    def list_core(self, resource, **_kw):
        self.version += 1
        self.listed["/api/v1/" + resource] = {"resourceVersion": str(self.version)}
        return [dict(n) for n in self.nodes]

    def watch(self, path, since, timeout, what=None):
        self.watches.append((path, since["resourceVersion"], timeout))
        outcome = self.outcomes.pop(0) if self.outcomes else []
        if isinstance(outcome, Exception):
            fail(outcome)
        yield from outcome


def fail(error):
    """Raise ``error`` (a watch that breaks)."""
    raise error


def session(api, **options):
    clock = Clock()
    return CanarySession(
        api, options=CanaryOptions(poll_interval=1.0, **options), clock=clock, sleep=clock.sleep
    ), clock


def checks(api, answers):
    """A check that LISTs nodes and answers ``answers`` in turn; records when it ran."""
    ran = []

    def check():
        api.list_core("nodes")
        ran.append(api.version)
        return answers[len(ran) - 1]

    return check, ran


def event(obj, kind="MODIFIED"):
    return {"type": kind, "object": obj}


def test_a_change_wakes_the_wait_before_the_poll_is_over_watching_from_the_lists_version():
    api = WatchingAPI([node("n1")], [event(node("n1"))])
    s, clock = session(api)
    check, ran = checks(api, [(False, "moving"), (True, "done")])
    assert s.wait(clock() + 60, check) == (True, "done")
    assert ran == [1, 2]
    assert api.watches == [(NODES, "1", 1.0)]
    assert sum(clock.sleeps) < s.poll  # only the short gap that batches a burst of changes


def test_without_a_change_the_check_runs_again_after_one_poll_the_resync():
    api = WatchingAPI([node("n1")], [], [])
    s, clock = session(api)
    check, ran = checks(api, [(False, "a"), (False, "b"), (True, "c")])
    start = clock()
    assert s.wait(start + 60, check) == (True, "c")
    assert len(ran) == 3 and clock() - start == pytest.approx(2 * s.poll)
    assert [w[1] for w in api.watches] == ["1", "2"]


def test_changes_the_wait_does_not_ask_for_do_not_wake_it():
    api = WatchingAPI([node("n1")], [event(node("other"))])
    s, clock = session(api)
    check, _ran = checks(api, [(False, "a"), (True, "b")])
    s.wait(clock() + 60, check, wake=about({"n1"}))
    assert clock.sleeps == [s.poll]


@pytest.mark.parametrize("failure", [K8sError("too old resource version", 410), K8sError("connection reset")])
def test_a_failed_watch_falls_back_to_the_poll(failure):
    api = WatchingAPI([node("n1")], failure)
    s, clock = session(api)
    check, ran = checks(api, [(False, "a"), (True, "b")])
    assert s.wait(clock() + 60, check) == (True, "b")
    assert clock.sleeps == [s.poll]


def test_a_client_that_cannot_watch_polls():
    class Plain:
        def list_core(self, resource, **_kw):
            return []

    s, clock = session(Plain())
    answers = iter([(False, "a"), (False, "b"), (True, "c")])
    assert s.wait(clock() + 60, lambda: next(answers)) == (True, "c")
    assert clock.sleeps == [s.poll, s.poll]


def test_the_deadline_and_the_pause_hold_as_with_polls():
    api = WatchingAPI([node("n1")])
    s, clock = session(api)
    check, _ran = checks(api, [(False, "x")] * 10)
    assert s.wait(clock() + 2.5, check) == (False, "x")
    assert clock.sleeps == [1.0, 1.0, 0.5]
    api = WatchingAPI([node("n1")])
    paused, clock = session(api, progress_interval=2)
    check, _ran = checks(api, [(False, "x")] * 10)
    with pytest.raises(Pause) as pause:
        paused.wait(clock() + 60, check, lambda: {"waiting": True})
    assert pause.value.progress == {"waiting": True}


def test_the_first_failed_node_ends_the_upgrade_wait_at_the_event_that_shows_it():
    members = ["n1", "n2"]
    nodes = [node("n1"), node("n2")]
    failing = [event(node("n2", "upgrade-done", "610.1")), event(node("n1", "upgrade-failed"))]
    api = WatchingAPI(nodes, failing)
    s, clock = session(api)

    def controller_fails_n1(resource, **kw):  # the LIST after the wake sees what the events showed
        listed = WatchingAPI.list_core(api, resource, **kw)
        return listed if api.version == 1 else [e["object"] for e in failing]

    api.list_core = controller_fails_n1
    failed, _report = wait_upgraded(s, members, "610.1", s.timer({}, "upgrade"), UpgradeWait("canary", 600, None))
    assert list(failed) == ["n1"] and "upgrade-failed" in failed["n1"]
    assert sum(clock.sleeps) < s.poll


def test_the_upgrade_wait_is_not_woken_until_the_last_member_is_done():
    members = ["n1", "n2"]
    progress = [event(node("n1", "upgrade-done", "610.1")), event(node("x", "upgrade-failed"))]
    api = WatchingAPI([node("n1"), node("n2")], progress, [event(node("n2", "upgrade-done", "610.1"))])
    s, clock = session(api)

    def controller(resource, **kw):
        WatchingAPI.list_core(api, resource, **kw)
        done = {1: [], 2: ["n1"]}.get(api.version, ["n1", "n2"])
        return [node(n, "upgrade-done", "610.1") if n in done else node(n) for n in members]

    api.list_core = controller
    failed, _report = wait_upgraded(s, members, "610.1", s.timer({}, "upgrade"), UpgradeWait("canary", 600, None))
    assert failed == {}
    assert clock.sleeps[0] == s.poll  # n1 alone did not wake it; the resync ran the check
    assert api.version == 3


@pytest.mark.parametrize(
    "obj, wakes",
    [
        (node("n1"), True),
        (node("n9"), False),
        ({"kind": "Pod", "spec": {"nodeName": "n1"}}, True),
        ({"kind": "Pod", "spec": {"nodeName": "n9"}}, False),
        ({"kind": "Event", "involvedObject": {"kind": "Node", "name": "n1"}}, True),
        ({"kind": "Event", "involvedObject": {"kind": "Node", "name": "n9"}}, False),
        ({"kind": "DaemonSet", "metadata": {"name": "nvidia-dcgm-exporter"}}, True),
    ],
)
def test_a_wave_wakes_on_changes_of_its_nodes_their_pods_and_events_and_of_anything_else(obj, wakes):
    assert about({"n1", "n2"})(event(obj)) is wakes
