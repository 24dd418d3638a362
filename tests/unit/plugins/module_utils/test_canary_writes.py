"""Specs for the canary's per-node writes: several nodes are written at once, the changes read in the nodes' order
whatever order the writes finished in, a failed node does not stop the others, and check mode writes nothing."""

import threading

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    WRITERS,
    CanarySession,
)


class RecordingAPI:
    """Takes node PATCHes; a PATCH of a node in ``refuse`` answers 403. ``hold`` makes every PATCH wait until
    that many are in flight at once (or 5 s pass), so a spec sees whether writes overlap."""

    def __init__(self, refuse=(), hold=0):
        self.refuse = set(refuse)
        self.patched = []
        self.barrier = threading.Barrier(hold, timeout=5) if hold else None
        self.lock = threading.Lock()

    def send_typed(self, method, path, body, query=None, content_type=None, what=None):
        name = path.rsplit("/", 1)[-1]
        if self.barrier is not None:
            self.barrier.wait()
        if name in self.refuse:
            raise K8sError("%s: forbidden" % what, 403)
        with self.lock:
            self.patched.append(name)
        return {}


def nodes(count):
    return [{"metadata": {"name": "gpu-%02d" % i, "labels": {"skip": "true"}}} for i in range(count)]


def release(session):
    return lambda node: session.label_node(node, {"skip": None}, "release")


def test_the_writes_of_several_nodes_are_in_flight_at_once():
    api = RecordingAPI(hold=WRITERS)
    session = CanarySession(api)
    session.each(nodes(WRITERS * 2), release(session))
    assert sorted(api.patched) == ["gpu-%02d" % i for i in range(WRITERS * 2)]


def test_the_changes_read_in_the_order_of_the_nodes():
    api = RecordingAPI()
    session = CanarySession(api)
    session.each(nodes(30), release(session))
    assert session.changes == ["node gpu-%02d: release" % i for i in range(30)]


def test_a_refused_node_does_not_stop_the_others_and_its_error_is_raised_after_them():
    api = RecordingAPI(refuse={"gpu-03"})
    session = CanarySession(api)
    with pytest.raises(K8sError, match="forbidden"):
        session.each(nodes(12), release(session))
    assert sorted(api.patched) == ["gpu-%02d" % i for i in range(12) if i != 3]
    assert "node gpu-03: release" not in session.changes and len(session.changes) == 11


def test_check_mode_records_the_changes_and_writes_nothing():
    api = RecordingAPI()
    session = CanarySession(api, check_mode=True)
    session.each(nodes(5), release(session))
    assert api.patched == [] and session.changes == ["node gpu-%02d: release" % i for i in range(5)]
