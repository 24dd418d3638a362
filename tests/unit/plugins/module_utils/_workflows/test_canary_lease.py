"""Specification of the canary record's Lease: one writing run at a time, a refusal that names the holder and its
age, a dead holder's lease taken once expired, and no write after the lease is lost or the controller is gone."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary import lease as lease_mod
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError

PATH = "/apis/coordination.k8s.io/v1/namespaces/gpu-operator/leases/gpuops-canary-upgrade"
NOW = 1_800_000_000.0


class LeaseServer:
    """One Lease object with the API server's optimistic concurrency: a PUT on an old resourceVersion is 409."""

    def __init__(self):
        self.lease, self.version, self.calls = None, 0, []

    def get_or_none(self, path, what=None):
        assert path == PATH
        self.calls.append("GET")
        return copy.deepcopy(self.lease)

    def send(self, method, path, body=None, what=None, accept_statuses=()):
        self.calls.append(method)
        if method == "DELETE":
            if self.lease and body["preconditions"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
                return None if 409 in accept_statuses else self._conflict()
            self.lease = None
            return {}
        if (
            method == "POST"
            and self.lease is not None
            or method == "PUT"
            and (
                self.lease is None
                or body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]
            )
        ):
            self._conflict()
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    @staticmethod
    def _conflict():
        raise K8sError("Operation cannot be fulfilled on leases: the object has been modified", 409)


def lease(server, holder, at=NOW):
    return lease_mod.RecordLease(server, "gpu-operator", "gpuops-canary-upgrade", holder, clock=lambda: at)


def test_a_free_lease_is_taken_held_and_given_back():
    server = LeaseServer()
    mine = lease(server, "alice@ctl pid 1 step=wave")
    mine.acquire()
    spec = server.lease["spec"]
    assert spec["holderIdentity"] == "alice@ctl pid 1 step=wave" and spec["leaseDurationSeconds"] == 30
    assert spec["renewTime"] == spec["acquireTime"] == "2027-01-15T08:00:00.000000Z"
    mine.check()
    mine.release()
    assert server.lease is None and server.calls == ["GET", "POST", "DELETE"]


def test_a_second_run_is_refused_with_the_holders_identity_and_age_and_changes_nothing():
    server = LeaseServer()
    first = lease(server, "alice@ctl pid 1 step=wave")
    first.acquire()
    calls = len(server.calls)
    with pytest.raises(PlanError) as refused:
        lease(server, "bob@ctl2 pid 2 step=prepare", at=NOW + 12).acquire()
    assert "alice@ctl pid 1 step=wave, renewed 12s ago" in refused.value.msg
    assert server.calls[calls:] == ["GET"] and server.lease["spec"]["holderIdentity"].startswith("alice")
    first.release()


def test_a_dead_holders_lease_is_taken_once_it_has_expired():
    server = LeaseServer()
    lease(server, "dead@ctl pid 9 step=wave").acquire()  # never renewed nor released: its process was killed
    with pytest.raises(PlanError, match="renewed 30s ago"):
        lease(server, "bob@ctl2 pid 2 step=wave", at=NOW + 30).acquire()
    taker = lease(server, "bob@ctl2 pid 2 step=wave", at=NOW + 31)
    taker.acquire()
    assert server.lease["spec"]["holderIdentity"] == "bob@ctl2 pid 2 step=wave"
    assert server.lease["spec"]["leaseTransitions"] == 1
    taker.release()


def test_two_runs_taking_a_free_lease_at_once_leave_one_holder():
    server = LeaseServer()
    first = lease(server, "a pid 1")
    first.acquire()
    server.get_or_none = lambda path, what=None: None  # the second run read the lease before the first took it
    with pytest.raises(PlanError, match="took Lease gpu-operator/gpuops-canary-upgrade at the same moment"):
        lease(server, "b pid 2").acquire()
    assert server.lease["spec"]["holderIdentity"] == "a pid 1"
    first.release()


def test_no_write_once_the_controller_is_gone_or_the_lease_was_lost(monkeypatch):
    server = LeaseServer()
    mine = lease(server, "alice pid 1")
    mine.acquire()
    monkeypatch.setattr(lease_mod.os, "getppid", lambda: -1)  # the parent (ansible-playbook's worker) ended
    with pytest.raises(PlanError, match="stopped before the next write: the controller that started this run is gone"):
        mine.check()
    mine.release()
    assert server.lease is not None  # a lost lease is not given back: it expires


def test_micro_time_round_trips():
    assert lease_mod.parse_micro_time(lease_mod.micro_time(NOW + 0.25)) == NOW + 0.25
    assert lease_mod.parse_micro_time("2027-01-15T08:00:00Z") == NOW
    assert lease_mod.parse_micro_time("garbage") is None and lease_mod.parse_micro_time(None) is None


def test_no_write_once_the_lease_went_unrenewed_for_its_duration(monkeypatch):
    server = LeaseServer()
    mine = lease(server, "alice pid 1")
    mine.acquire()
    mine.renewed -= 31  # every renewal since failed (the API server unreachable): another run may have taken it
    with pytest.raises(PlanError, match="could not be renewed for 30s"):
        mine.check()
    mine.release()
