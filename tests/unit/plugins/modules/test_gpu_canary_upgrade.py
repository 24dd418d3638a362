"""Specification of plugins/modules/gpu_canary_upgrade.py with a stubbed API server: the plan in check mode, the
argument checks, an unreadable kubeconfig, and an aborted wave's result."""

from __future__ import annotations

import copy
import json
from urllib.parse import parse_qs, urlsplit

import module_harness as harness
from module_harness import Resp, page

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_canary_upgrade

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
DRIVER = "nvidia.com/cuda.driver-version.full"
FAILED = "gpuops.io/canary-upgrade-failed"
RECORD = "/api/v1/namespaces/gpu-operator/configmaps/gpuops-canary-upgrade"
POLICY = "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"
EMPTY_LISTS = (
    "/api/v1/pods",
    "/api/v1/namespaces/gpu-operator/pods",
    "/api/v1/namespaces/default/events",
    "/apis/policy/v1/poddisruptionbudgets",
    "/apis/apps/v1/namespaces/gpu-operator/daemonsets",
)


def gpu_node(name):
    return {
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.present": "true", STATE: "upgrade-done", DRIVER: "580.1"},
            "annotations": {},
        },
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}},
    }


def merge_patch(target, patch):
    """Apply a JSON merge patch (RFC 7386) to ``target`` in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            merge_patch(target.setdefault(key, {}), value)
        else:
            target[key] = value


class StubCluster:
    """Three GPU nodes, a CPU node and a ClusterPolicy; keeps the progress ConfigMap once saved and applies node and
    ClusterPolicy patches. Records every request as ``(method, path)``."""

    def __init__(self):
        self.nodes = {n: gpu_node(n) for n in ("g0", "g1", "g2")}
        self.nodes["cpu0"] = {"metadata": {"name": "cpu0", "labels": {}}, "spec": {}, "status": {}}
        self.policy = {
            "metadata": {"name": "cluster-policy", "labels": {"helm.sh/chart": "gpu-operator-v26.7.0"}},
            "spec": {"driver": {"version": "580.1"}, "daemonsets": {}},
        }
        self.record = None
        self.lease = None
        self.calls = []

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None):
        parts = urlsplit(url)
        path, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.calls.append((method, path))
        if method == "PATCH":
            return self.patch(path, json.loads(body))
        if "/leases" in path:
            return self.lease_request(method, path, body)
        assert method == "GET", (method, path)
        if path == RECORD:
            return Resp(200, self.record) if self.record else Resp(404, {"message": "not found"}, "Not Found")
        if path == "/api/v1/nodes":
            return page(copy.deepcopy(list(self.nodes.values())), query)
        if path == "/apis/nvidia.com/v1/clusterpolicies":
            return page([copy.deepcopy(self.policy)], query)
        if path in EMPTY_LISTS:
            return page([], query)
        return Resp(404, {"message": "the server could not find the requested resource"}, "Not Found")

    def lease_request(self, method, path, body):
        """The record's Lease: taken (POST, PUT on its resourceVersion), read, given back (DELETE)."""
        if method == "GET":
            return Resp(200, self.lease) if self.lease else Resp(404, {"message": "not found"}, "Not Found")
        if method == "DELETE":
            self.lease = None
            return Resp(200, {})
        self.lease = dict(json.loads(body))
        self.lease["metadata"] = dict(self.lease["metadata"], resourceVersion=str(len(self.calls)))
        return Resp(201 if method == "POST" else 200, self.lease)

    def patch(self, path, body):
        if path == RECORD:
            self.record = body
        elif path == POLICY:
            merge_patch(self.policy, body)
        else:
            merge_patch(self.nodes[path.rsplit("/", 1)[-1]], body)
        return Resp(200, {})

    def writes(self):
        return [c for c in self.calls if c[0] != "GET" and "/leases" not in c[1]]


def run_module(server, monkeypatch, check=False, **args):
    args.setdefault("canary_nodes", ["g0"])
    return harness.run_module(gpu_canary_upgrade, monkeypatch, args, server=server, check=check)


def test_check_mode_plans_the_waves_and_the_gate_and_only_reads(monkeypatch):
    server = StubCluster()
    res = run_module(server, monkeypatch, check=True, driver_version="610.1", waves=[1, "100%"])
    assert res["_kind"] == "exit" and res["changed"] is False and res["changes"] == []
    plan = res["plan"]
    assert [(w["name"], w["nodes"], w["status"]) for w in plan["waves"]] == [
        ("canary", ["g0"], "pending"),
        ("wave-1", ["g1"], "pending"),
        ("wave-2", ["g2"], "pending"),
    ]
    assert plan["target"] == {"driver_version": "610.1", "chart_version": None}
    assert plan["from"] == {"driver_version": "580.1", "chart_version": "v26.7.0", "running": {"580.1": 3}}
    assert plan["resumed"] is False and plan["gate"]["passed"] is True and plan["nodes"] == 3
    assert res["record"]["phase"] == "in-progress"
    assert server.writes() == [] and res["api_requests"] == len(server.calls)


def test_check_mode_prepare_lists_its_writes_without_making_one(monkeypatch):
    server = StubCluster()
    res = run_module(server, monkeypatch, check=True, step="prepare", driver_version="610.1")
    assert res["_kind"] == "exit" and server.writes() == []
    assert "node g1: hold the upgrade (skip label)" in res["changes"]
    assert res["changes"][-1] == (
        "ClusterPolicy cluster-policy: set spec.driver upgradePolicy.autoUpgrade=true, version=610.1"
    )
    assert res["changed"] is True  # what it would change


def test_without_a_target_version_a_planning_step_fails_naming_both_options_before_any_request(monkeypatch):
    server = StubCluster()
    res = run_module(server, monkeypatch, step="plan")
    assert res["_kind"] == "fail" and res["msg"] == "step=plan needs a target: driver_version, chart_version or both"
    assert server.calls == []


def test_the_status_needs_no_target_and_says_when_nothing_is_recorded(monkeypatch):
    server = StubCluster()
    res = run_module(server, monkeypatch, step="status", canary_nodes=[])
    assert res["_kind"] == "exit" and res["changed"] is False and server.writes() == []
    assert res["status"]["lines"] == [
        "No canary upgrade is recorded in ConfigMap gpu-operator/gpuops-canary-upgrade.",
        "Nothing of a canary upgrade is left on the cluster.",
        "Nothing is left to clean up.",
    ]


def test_step_wave_without_wave_fails_naming_the_option_before_any_request(monkeypatch):
    server = StubCluster()
    res = run_module(server, monkeypatch, step="wave", driver_version="610.1")
    assert res["_kind"] == "fail" and res["msg"] == "step=wave needs wave (the index of a wave in plan.waves)"
    assert server.calls == [] and res["api_requests"] == 0


def test_a_kubeconfig_path_that_does_not_exist_fails_naming_it_and_the_fix(monkeypatch, tmp_path):
    missing = str(tmp_path / "no-such-kubeconfig")
    res = harness.run_module(gpu_canary_upgrade, monkeypatch, {"kubeconfig": missing, "driver_version": "610.1"})
    assert res["_kind"] == "fail" and "exception" not in res
    assert missing in res["msg"] and "could not be read" in res["msg"] and "Set the kubeconfig option" in res["msg"]


def test_a_failed_wave_aborts_with_the_failed_nodes_the_wave_and_the_request_count(monkeypatch):
    server = StubCluster()
    assert run_module(server, monkeypatch, step="prepare", driver_version="610.1")["_kind"] == "exit"
    assert server.nodes["g0"]["metadata"]["labels"][SKIP] == "true"
    server.nodes["g0"]["metadata"]["labels"][STATE] = "upgrade-failed"  # the upgrade controller gives up on g0
    before = len(server.calls)
    res = run_module(server, monkeypatch, step="wave", wave=0, eviction="none", driver_version="610.1")
    why = "the operator's upgrade controller set %s=upgrade-failed" % STATE
    assert res["_kind"] == "fail" and "exception" not in res
    assert res["msg"].startswith(
        "canary failed: node g0: %s. Left on the cluster: the progress record (phase aborted);" % why
    )
    assert res["msg"].endswith(
        "Fix the cause and run the same upgrade again to resume it, or undo it with step=rollback "
        "(gpu_canary_upgrade_action=rollback with the role; no target needed)."
    )
    assert res["failed_nodes"] == {"g0": why} and res["wave"] == 0
    assert res["api_requests"] == len(server.calls) - before > 0
    g0 = server.nodes["g0"]
    assert why in g0["metadata"]["annotations"][FAILED]
    assert [t["key"] for t in g0["spec"]["taints"]] == ["gpuops.io/canary-upgrade"]
    assert json.loads(server.record["data"]["record"])["phase"] == "aborted"
