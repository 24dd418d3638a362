"""Specs for the canary's per-node writes: several nodes are written at once, the changes read in the nodes' order
whatever order the writes finished in, a failed node does not stop the others, and check mode writes nothing; what a
wave changes on one node is one write, unless its GPU workloads have to move between the taint and the release."""

import threading

import pytest
from test_canary import NAMES, SKIP, FakeAPI, canary, held_validator, planned

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


def gpu_job(node):
    return {
        "metadata": {"name": "job-on-" + node, "namespace": "default", "labels": {}},
        "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running"},
    }


def node_writes(api, *names):
    paths = {"/api/v1/nodes/" + n for n in names}
    return [w[2] for w in api.writes if w[1] in paths or w[0] == "POST"]


def test_a_wave_that_moves_no_workloads_taints_and_releases_each_node_in_one_write():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    c.run_wave(rec, 0, {"policy": "none"})
    assert node_writes(api, "a-0") == [
        "node a-0: hold the upgrade (skip label)",
        "node a-0: add taint gpuops.io/canary-upgrade:NoSchedule; release the driver upgrade (remove skip label)",
    ]
    assert (
        api.nodes["a-0"]["spec"]["taints"][0]["value"] == "canary"
        and SKIP not in api.nodes["a-0"]["metadata"]["labels"]
    )


def test_a_wave_that_evicts_taints_every_node_then_evicts_then_releases():
    api = FakeAPI(NAMES)
    api.pods = [gpu_job("a-0")]
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    writes, changes = len(api.writes), len(c.changes)
    c.run_wave(rec, 0, {"policy": "evict"})
    made = [w[2] for w in api.writes[writes:] if "progress record" not in w[2]]
    # the nodes' writes run in parallel: the API sees them in any order, the changes list them in the nodes' order
    recorded = [change for change in c.changes[changes:] if "progress record" not in change]
    assert recorded == [
        "node a-0: add taint gpuops.io/canary-upgrade:NoSchedule",
        "node h-0: add taint gpuops.io/canary-upgrade:NoSchedule",
        "evict pod default/job-on-a-0 from node a-0",
        "node a-0: release the driver upgrade (remove skip label)",
        "node h-0: release the driver upgrade (remove skip label)",
    ]
    assert sorted(made) == sorted(recorded)


class ConflictingAPI(RecordingAPI):
    """Answers the first PATCH that carries a resourceVersion with 409; GET returns the node as changed since."""

    def __init__(self, fresh):
        super().__init__()
        self.fresh = fresh
        self.bodies = []

    def send_typed(self, method, path, body, query=None, content_type=None, what=None):
        self.bodies.append(body)
        if len(self.bodies) == 1 and body["metadata"].get("resourceVersion"):
            raise K8sError("%s: the object has been modified" % what, 409)
        return super().send_typed(method, path, body, query, content_type, what)

    def get(self, path, what=None):
        return self.fresh


def test_a_taint_that_conflicts_is_made_again_on_the_node_read_afresh_with_its_labels():
    node = {"metadata": {"name": "gpu-00", "resourceVersion": "1", "labels": {"skip": "true"}}, "spec": {}}
    fresh = {
        "metadata": {"name": "gpu-00", "resourceVersion": "2", "labels": {"skip": "true"}},
        "spec": {"taints": [{"key": "other", "effect": "NoExecute"}]},
    }
    api = ConflictingAPI(fresh)
    session = CanarySession(api)
    assert session.taint(node, "wave-1", [("labels", {"skip": None}, "release")])
    last = api.bodies[-1]
    assert last["metadata"] == {"resourceVersion": "2", "labels": {"skip": None}}
    assert [t["key"] for t in last["spec"]["taints"]] == ["other", "gpuops.io/canary-upgrade"]
    assert session.changes == ["node gpu-00: add taint gpuops.io/canary-upgrade:NoSchedule; release"]


class CountingAPI(FakeAPI):
    """Counts the LISTs of the operator's pods."""

    operator_pod_lists = 0

    def list_core(self, resource, namespace=None, **kw):
        if resource == "pods" and namespace == "gpu-operator":
            self.operator_pod_lists += 1
        return super().list_core(resource, namespace, **kw)


def test_a_wave_whose_operands_need_no_renewal_is_proven_from_the_operand_read_itself():
    api = CountingAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    api.operator_pod_lists = 0
    out = c.run_wave(rec, 0, {"policy": "none"})
    assert out["operands_renewed"] == [] and all(not v["problems"] for v in out["nodes"].values())
    assert api.operator_pod_lists == 1


def test_a_proof_the_operand_read_cannot_decide_reads_the_pods_again():
    api = CountingAPI(NAMES)
    api.operand_images["a-0"] = "validator:v1"
    api.daemonsets = [held_validator("validator:v2")]
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    api.operator_pod_lists = 0
    out = c.run_wave(rec, 0, {"policy": "none"})
    assert out["operands_renewed"] == ["gpu-operator/val-a-0", "gpu-operator/val-h-0"]
    assert api.operator_pod_lists == 2 and all(not v["problems"] for v in out["nodes"].values())
