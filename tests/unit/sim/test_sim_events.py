"""Specs for the simulated operator's events: written as client-go's recorder writes them, a repeat of the same
event on the same object counted on the Event already written."""

from types import SimpleNamespace

from kubernetes.client.rest import ApiException

from tests.sim.operator.events import EventRecorder

NODE = {"metadata": {"name": "gpu-0", "uid": "u-1"}}


class FakeCore:
    def __init__(self):
        self.events = {}
        self.patches = []

    def create_namespaced_event(self, namespace, body):
        name = "%s%d" % (body["metadata"]["generateName"], len(self.events))
        self.events[name] = dict(body, name=name)
        return SimpleNamespace(metadata=SimpleNamespace(name=name))

    def patch_namespaced_event(self, name, namespace, body):
        if name not in self.events:
            raise ApiException(status=404, reason="Not Found")
        self.patches.append(name)
        self.events[name].update(body)


def upgraded(recorder, state):
    recorder.record(NODE, "Node", "", "GPUDriverUpgrade", "node state label set to %s" % state, "Normal")


def test_a_repeated_event_counts_on_the_event_already_written():
    core = FakeCore()
    recorder = EventRecorder(core)
    for _upgrade in range(3):
        upgraded(recorder, "upgrade-done")
    assert len(core.events) == 1 and next(iter(core.events.values()))["count"] == 3


def test_another_message_is_another_event():
    core = FakeCore()
    recorder = EventRecorder(core)
    upgraded(recorder, "cordon-required")
    upgraded(recorder, "upgrade-done")
    assert sorted(e["message"] for e in core.events.values()) == [
        "node state label set to cordon-required",
        "node state label set to upgrade-done",
    ]


def test_an_event_deleted_meanwhile_is_written_anew():
    core = FakeCore()
    recorder = EventRecorder(core)
    upgraded(recorder, "upgrade-done")
    core.events.clear()
    upgraded(recorder, "upgrade-done")
    assert [e["count"] for e in core.events.values()] == [1]
