"""Specs for the cluster-side canary steps against an in-memory API that plays the operator's upgrade controller."""

import copy
import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import CanaryAbort, PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DEFAULT_TAINT_KEY,
    DRIVER_VERSION_LABEL,
    FAILED_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    WAVE_FAILED,
    WAVE_PROVEN,
    WAVE_UPGRADED,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.run import Canary

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
CM = "/api/v1/namespaces/gpu-operator/configmaps/gpuops-canary-upgrade"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/gpu-operator/leases/gpuops-canary-upgrade"


def merge(dst, patch):
    for k, v in patch.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


class FakeAPI:
    """Nodes, pods, a ClusterPolicy, an NFD worker DaemonSet and the record ConfigMap; on each node LIST it moves
    every node without the skip label to the ClusterPolicy's driver (or to upgrade-failed when it is in ``failing``;
    a node in ``slow`` first shows pod-restart-required for that many LISTs). With ``stopped`` the upgrade
    controller does nothing at all."""

    def __init__(self, names, driver="580.1"):
        self.requests = 0
        self.writes = []
        self.failing = set()
        self.slow = {}
        self.stopped = False
        self.pdb_blocked = set()
        self.operand_images = {}
        self.nodes = {}
        for n in names:
            self.nodes[n] = {
                "metadata": {
                    "name": n,
                    "resourceVersion": "1",
                    "labels": {
                        "feature.node.kubernetes.io/pci-10de.present": "true",
                        "gpuops.io/pool": n.split("-")[0],
                        STATE: "upgrade-done",
                        DRIVER_VERSION_LABEL: driver,
                    },
                    "annotations": {},
                },
                "spec": {},
                "status": {
                    "capacity": {"nvidia.com/gpu": "8"},
                    "allocatable": {"nvidia.com/gpu": "8"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        self.pods = []
        self.cp = {
            "metadata": {"name": "cluster-policy", "labels": {"helm.sh/chart": "gpu-operator-v26.7.0"}},
            "spec": {"driver": {"version": driver, "upgradePolicy": {"autoUpgrade": True}}, "daemonsets": {}},
            "status": {"namespace": "gpu-operator"},
        }
        self.cm = None
        self.lease = None
        self.lease_writes = []
        self.daemonsets = []
        self.nfd = {
            "metadata": {"name": "nfd-worker", "labels": {"role": "worker"}},
            "spec": {"template": {"spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}},
        }

    def operator_step(self):
        target = self.cp["spec"]["driver"]["version"]
        for n, node in self.nodes.items():
            lab = node["metadata"]["labels"]
            if self.stopped:
                continue
            if lab.get(DRIVER_VERSION_LABEL) == target:
                lab[STATE] = "upgrade-done"
            elif lab.get(SKIP) == "true":
                lab[STATE] = "upgrade-required"
            elif lab.get(STATE) == "upgrade-failed":
                continue
            elif self.slow.get(n):
                self.slow[n] -= 1
                lab[STATE] = "pod-restart-required"
            elif n in self.failing:
                lab[STATE] = "upgrade-failed"
                node["spec"]["unschedulable"] = True  # the controller cordoned it and leaves it cordoned
            else:
                lab[STATE] = "upgrade-done"
                lab[DRIVER_VERSION_LABEL] = target
                node["spec"].pop("unschedulable", None)

    # reads ---------------------------------------------------------------------------------------
    def list_core(self, resource, namespace=None, **_kw):
        self.requests += 1
        if resource == "nodes":
            self.operator_step()
            return copy.deepcopy(list(self.nodes.values()))
        if resource == "pods":
            if namespace == "gpu-operator":
                return [self.validator(n) for n in self.nodes]
            return copy.deepcopy(self.pods)
        return []

    def validator(self, n):
        image = self.operand_images.get(n)
        return {
            "metadata": {
                "name": "val-" + n,
                "namespace": "gpu-operator",
                "labels": {"app": "nvidia-operator-validator"},
            },
            "spec": {"nodeName": n, "containers": [{"image": image}] if image else []},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }

    def list_all(self, path, **_kw):
        self.requests += 1
        if path.endswith("/daemonsets"):
            return copy.deepcopy([self.nfd] if _kw.get("label_selector") else self.daemonsets), {}
        return [], {}

    def list_custom(self, group, version, plural, **_kw):
        self.requests += 1
        return [copy.deepcopy(self.cp)] if plural == "clusterpolicies" else []

    def get_or_none(self, path, what=None):
        self.requests += 1
        if path == LEASE:
            return copy.deepcopy(self.lease)
        assert path == CM
        return copy.deepcopy(self.cm)

    def get(self, path, what=None):
        return copy.deepcopy(self.nodes[path.rsplit("/", 1)[-1]])

    # writes --------------------------------------------------------------------------------------
    def send_typed(self, method, path, body, query=None, content_type=None, what=None):
        self.requests += 1
        self.writes.append((method, path, what))
        if path == CM:
            self.cm = copy.deepcopy(body)
        elif path.startswith("/api/v1/nodes/"):
            node = self.nodes[path.rsplit("/", 1)[-1]]
            body = copy.deepcopy(body)
            body.get("metadata", {}).pop("resourceVersion", None)
            merge(node, body)
        elif "clusterpolicies" in path:
            merge(self.cp, body)
        elif path.endswith("/daemonsets/nfd-worker"):
            merge(self.nfd, body)
        return {}

    def delete_pod(self, namespace, name, grace_period_seconds=0):
        """The DaemonSet controller recreates the pod with its template's image."""
        self.writes.append(("DELETE", namespace + "/" + name, "delete pod"))
        template = self.daemonsets[0]["spec"]["template"]["spec"]["containers"][0]["image"]
        self.operand_images[name.split("-", 1)[1]] = template
        return True

    def send(self, method, path, body=None, what=None, accept_statuses=()):
        self.requests += 1
        if "/leases" in path:  # the record's Lease: taken, renewed, given back
            self.lease_writes.append(method)
            self.lease = (
                None if method == "DELETE" else dict(body, metadata=dict(body["metadata"], resourceVersion="1"))
            )
            return copy.deepcopy(self.lease)
        name = path.split("/")[-2]
        if name in self.pdb_blocked:
            raise K8sError("Cannot evict pod as it would violate the pod's disruption budget.", 429)
        self.writes.append((method, path, what))
        self.pods = [p for p in self.pods if p["metadata"]["name"] != name]
        return {}


class Clock:
    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


NAMES = ["a-0", "a-1", "a-2", "h-0", "h-1", "h-2"]


def canary(api, check_mode=False):
    clock = Clock()
    return Canary(api, options=CanaryOptions(poll_interval=1.0), check_mode=check_mode, clock=clock, sleep=clock.sleep)


def planned(api, c, waves=("100%",), target="610.1"):
    return c.plan(CanaryOptions(driver_version=target, canary_nodes=["a-0", "h-0"], waves=list(waves)))


def record(api):
    return json.loads(api.cm["data"]["record"])


def test_check_mode_plans_and_lists_every_write_without_making_one():
    api = FakeAPI(NAMES)
    c = canary(api, check_mode=True)
    plan, rec, nodes, cp = planned(api, c, waves=[1, "100%"])
    assert [w["nodes"] for w in plan["waves"]] == [["a-0", "h-0"], ["a-1"], ["h-1", "a-2", "h-2"]]
    assert plan["waves"][0]["taint"] == "gpuops.io/canary-upgrade=canary:NoSchedule"
    c.prepare(rec, nodes, cp, {"autoUpgrade": True})
    c.run_wave(rec, 0, {"policy": "evict"})
    assert api.writes == []
    assert "node a-0: add taint gpuops.io/canary-upgrade:NoSchedule" in c.changes
    assert "node h-2: hold the upgrade (skip label)" in c.changes
    assert api.cp["spec"]["driver"]["version"] == "580.1"


def test_prepare_records_first_then_holds_every_node_then_makes_the_operands_tolerate_then_sets_the_version():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {"autoUpgrade": True, "maxParallelUpgrades": 0})
    whats = [w[2] for w in api.writes]
    # the record names what the preparation changes before any of it is changed, so nothing is ever left unnamed
    assert whats[0].startswith("save the progress record")
    assert record(api)["skip_labelled"] == sorted(NAMES)
    assert record(api)["prepared"] == {
        "tolerations": {
            "cluster_policy": None,
            "nfd": {"nfd-worker": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
        },
        "upgrade_policy": {"maxParallelUpgrades": None},
    }
    # every node held before the tolerations change the driver's pod template: NVIDIA's upgrade controller takes a
    # new template for an upgrade of every node not held
    assert [w for w in whats[1:7] if "skip label" in w] == whats[1:7]
    assert whats[7] == (
        "ClusterPolicy cluster-policy: set spec.daemonsets toleration gpuops.io/canary-upgrade:NoSchedule"
    )
    assert whats[8] == "DaemonSet gpu-operator/nfd-worker: add toleration gpuops.io/canary-upgrade:NoSchedule"
    assert whats[9].startswith("ClusterPolicy cluster-policy: set spec.driver") and "version=610.1" in whats[9]
    assert all(api.nodes[n]["metadata"]["labels"][SKIP] == "true" for n in NAMES)
    # the operator holds every node: nothing moves before a wave releases it
    api.list_core("nodes")
    assert {api.nodes[n]["metadata"]["labels"][STATE] for n in NAMES} == {"upgrade-required"}


def test_a_wave_upgrades_only_its_nodes_and_finishing_it_untaints_them():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    out = c.run_wave(rec, 0, {"policy": "evict"})
    assert set(out["nodes"]) == {"a-0", "h-0"} and all(not v["problems"] for v in out["nodes"].values())
    labels = {n: api.nodes[n]["metadata"]["labels"] for n in NAMES}
    assert [n for n in NAMES if labels[n][DRIVER_VERSION_LABEL] == "610.1"] == ["a-0", "h-0"]
    assert api.nodes["a-0"]["spec"]["taints"] == [{"key": DEFAULT_TAINT_KEY, "value": "canary", "effect": "NoSchedule"}]
    assert record(api)["waves"][0]["status"] == WAVE_UPGRADED
    c.finish_wave(rec, 0, True)
    assert "taints" not in api.nodes["a-0"]["spec"]
    assert record(api)["waves"][0]["status"] == WAVE_PROVEN and record(api)["phase"] == "in-progress"
    c.run_wave(rec, 1, {"policy": "evict"})
    c.finish_wave(rec, 1, True)
    assert record(api)["phase"] == "done"
    assert all(SKIP not in api.nodes[n]["metadata"]["labels"] for n in NAMES)


def test_a_failed_canary_aborts_tainted_and_annotated_with_every_other_node_held():
    api = FakeAPI(NAMES)
    api.failing.add("h-0")
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    with pytest.raises(CanaryAbort) as exc:
        c.run_wave(rec, 0, {"policy": "evict"})
    assert exc.value.failed == {"h-0": "the operator's upgrade controller set %s=upgrade-failed" % STATE}
    h0 = api.nodes["h-0"]
    assert "canary" in h0["metadata"]["annotations"][FAILED_ANNOTATION]
    assert h0["spec"]["taints"][0]["key"] == DEFAULT_TAINT_KEY
    for n in ["a-1", "a-2", "h-1", "h-2"]:
        lab = api.nodes[n]["metadata"]["labels"]
        assert lab[SKIP] == "true" and lab[DRIVER_VERSION_LABEL] == "580.1" and "taints" not in api.nodes[n]["spec"]
    rec2 = record(api)
    assert rec2["phase"] == "aborted" and rec2["waves"][0]["status"] == WAVE_FAILED and "h-0" in rec2["reason"]


def test_a_rerun_resumes_the_record_and_retries_the_node_it_left_failed():
    api = FakeAPI(NAMES)
    api.failing.add("h-0")
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    with pytest.raises(CanaryAbort):
        c.run_wave(rec, 0, {"policy": "evict"})
    api.failing.clear()  # the cause is fixed
    c2 = canary(api)
    plan, rec, nodes, cp = planned(api, c2)
    assert plan["resumed"] and plan["phase"] == "aborted" and plan["gate"]["passed"]
    c2.prepare(rec, nodes, cp, {})
    c2.run_wave(rec, 0, {"policy": "evict"})
    assert api.nodes["h-0"]["metadata"]["labels"][DRIVER_VERSION_LABEL] == "610.1"
    assert FAILED_ANNOTATION not in api.nodes["h-0"]["metadata"]["annotations"]


def test_another_target_while_a_run_is_unfinished_is_refused():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    with pytest.raises(PlanError, match="unfinished canary upgrade"):
        planned(api, canary(api), target="620.1")


def test_gpu_pods_are_evicted_and_a_pdb_that_never_allows_it_aborts_the_wave():
    api = FakeAPI(NAMES)
    api.pods = [
        {
            "metadata": {"name": name, "namespace": "default", "labels": {}},
            "spec": {"nodeName": "a-0", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"},
        }
        for name in ("job-a", "job-b")
    ]
    api.pdb_blocked.add("job-b")
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    with pytest.raises(CanaryAbort, match="default/job-b"):
        c.run_wave(rec, 0, {"policy": "evict", "eviction_timeout": 5})
    assert [p["metadata"]["name"] for p in api.pods] == ["job-b"]
    assert api.nodes["a-0"]["metadata"]["labels"][SKIP] == "true"  # never released
    assert record(api)["phase"] == "aborted"


def test_the_roles_failed_proof_aborts_the_wave_with_its_reason():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    c.run_wave(rec, 0, {"policy": "evict"})
    with pytest.raises(CanaryAbort, match="smoke pod failed"):
        c.finish_wave(rec, 0, False, "smoke pod failed on h-0", ["h-0"])
    assert "smoke pod failed" in api.nodes["h-0"]["metadata"]["annotations"][FAILED_ANNOTATION]
    assert FAILED_ANNOTATION not in api.nodes["a-0"]["metadata"]["annotations"]
    assert api.nodes["a-0"]["spec"]["taints"]  # the whole wave stays tainted


def test_rollback_points_the_driver_back_releases_every_node_and_leaves_the_policy_and_nfd_as_before():
    api = FakeAPI(NAMES)
    api.cp["spec"]["daemonsets"]["updateStrategy"] = "RollingUpdate"
    cp_before, nfd_before = copy.deepcopy(api.cp), copy.deepcopy(api.nfd)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {"autoUpgrade": True, "maxParallelUpgrades": 0}, hold_operands=True)
    c.run_wave(rec, 0, {"policy": "evict"})
    failed, progress = c.rollback(rec, timeout=30)
    assert failed == {} and not progress["waiting"]
    assert progress["lines"][0].startswith("rollback: 6 of 6 nodes done")
    for n in NAMES:
        assert api.nodes[n]["metadata"]["labels"][DRIVER_VERSION_LABEL] == "580.1"
        assert SKIP not in api.nodes[n]["metadata"]["labels"] and "taints" not in api.nodes[n]["spec"]
    assert api.cp == cp_before and api.nfd == nfd_before
    assert record(api)["phase"] == "rolled-back"


def test_a_failed_rollback_says_which_nodes_did_not_come_back_and_a_second_one_finishes_it():
    api = FakeAPI(NAMES)
    cp_before, nfd_before = copy.deepcopy(api.cp), copy.deepcopy(api.nfd)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {"autoUpgrade": True})
    c.run_wave(rec, 0, {"policy": "evict"})
    api.failing.add("h-0")  # the old driver does not come back on h-0
    failed, _progress = canary(api).rollback(rec, timeout=30)
    assert failed == {"h-0": "the operator's upgrade controller set %s=upgrade-failed" % STATE}
    assert record(api)["phase"] == "rollback-failed"
    assert record(api)["reason"] == "rollback did not complete: node h-0: " + failed["h-0"]
    # the preparation is taken back all the same: the policy and NFD are as before the run
    assert api.cp == dict(cp_before, spec=dict(cp_before["spec"], driver=api.cp["spec"]["driver"]))
    assert api.cp["spec"]["driver"]["version"] == "580.1" and api.nfd == nfd_before
    api.failing.clear()  # fixed: the second rollback releases h-0 again and finishes
    rec = record(api)
    failed, _progress = canary(api).rollback(rec, timeout=30)
    assert failed == {} and record(api)["phase"] == "rolled-back" and api.cp == cp_before


def prepared_with_a_slow_node(lists):
    """A prepared upgrade whose h-0 shows pod-restart-required for ``lists`` node LISTs; ``(api, record)``."""
    api = FakeAPI(NAMES)
    api.slow = {"h-0": lists}
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    return api, rec


def test_a_wave_returns_where_it_stands_each_progress_interval_and_a_continued_call_keeps_its_deadline():
    api, rec = prepared_with_a_slow_node(14)
    clock = Clock()
    first = Canary(api, options=CanaryOptions(poll_interval=1.0, progress_interval=5), clock=clock, sleep=clock.sleep)
    out = first.run_wave(rec, 0, {"policy": "evict", "wave_timeout": 20})
    assert out["progress"]["waiting"]
    assert out["progress"]["lines"] == [
        "canary: 1 of 2 nodes done, 1 in progress, 0 not started, 0 failed (5 s of at most 20 s)",
        "h-0: pod-restart-required, driver 580.1, waiting for the new driver pod to run and be ready",
    ]
    assert record(api)["waves"][0]["waits"]["upgrade"]["since"] == int(Clock().t)
    # each next call goes on with the same deadline; the wave stays released, nothing is labelled again
    writes, heads = len(api.writes), []
    following = CanaryOptions(poll_interval=1.0, progress_interval=5, continue_wait=True)
    while out["progress"]["waiting"]:
        nxt = Canary(api, options=following, clock=clock, sleep=clock.sleep)
        out = nxt.run_wave(rec, 0, {"policy": "evict", "wave_timeout": 20})
        heads.append(out["progress"]["lines"][0])
    assert heads[0].endswith("(10 s of at most 20 s)") and len(heads) == 2
    assert heads[-1].startswith("canary: 2 of 2 nodes done") and out["progress"]["done"] == ["a-0", "h-0"]
    assert all("progress record" in w[2] for w in api.writes[writes:])
    assert record(api)["waves"][0]["status"] == WAVE_UPGRADED


def test_a_run_resumed_while_a_wave_was_under_way_does_not_hold_that_wave_again_and_finishes_it():
    api, rec = prepared_with_a_slow_node(30)
    clock = Clock()
    out = Canary(
        api, options=CanaryOptions(poll_interval=1.0, progress_interval=3), clock=clock, sleep=clock.sleep
    ).run_wave(rec, 0, {"policy": "evict"})
    assert out["progress"]["waiting"]  # the run is interrupted here, the canary released
    again = canary(api)
    _plan, rec, nodes, cp = planned(api, again)
    again.prepare(rec, nodes, cp, {})
    assert SKIP not in api.nodes["h-0"]["metadata"]["labels"]  # the released canary is not held again
    out = again.run_wave(rec, 0, {"policy": "evict"})
    assert out["progress"]["done"] == ["a-0", "h-0"] and record(api)["waves"][0]["status"] == WAVE_UPGRADED


def test_a_wave_in_which_nothing_moves_stops_after_the_grace_period_not_the_wave_timeout():
    api = FakeAPI(NAMES)
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {})
    api.stopped = True  # the upgrade controller does not run: no node of the wave ever moves
    start = c.clock()
    with pytest.raises(CanaryAbort) as exc:
        c.run_wave(rec, 0, {"policy": "evict", "wave_timeout": 1800, "stall_grace": 10})
    assert 10 <= c.clock() - start <= 12
    assert exc.value.msg == (
        "canary failed: node a-0: nothing moved for 10 s, so nothing can progress (upgrade-done, driver 580.1, "
        "waiting for the upgrade controller to start it); node h-0: nothing moved for 10 s, so nothing can "
        "progress (upgrade-done, driver 580.1, waiting for the upgrade controller to start it)"
    )
    # the wave's nodes were never started: they get their skip label back, and keep the canary taint
    for n in ("a-0", "h-0"):
        assert api.nodes[n]["metadata"]["labels"][SKIP] == "true" and api.nodes[n]["spec"]["taints"]
    assert record(api)["phase"] == "aborted"


def test_an_empty_canary_pool_and_unknown_canary_nodes_are_errors_naming_the_fix():
    api = FakeAPI(NAMES)
    with pytest.raises(PlanError, match="not GPU nodes of this cluster"):
        canary(api).plan(CanaryOptions(driver_version="610.1", canary_nodes=["nope"]))
    with pytest.raises(PlanError, match="canary pool is empty"):
        canary(api).plan(CanaryOptions(driver_version="610.1", canary_selector="gpuops.io/canary=true"))


def held_validator(image):
    """The validator's operand DaemonSet held (``OnDelete``), its template at ``image``."""
    return {
        "metadata": {"name": "nvidia-operator-validator"},
        "spec": {
            "updateStrategy": {"type": "OnDelete"},
            "selector": {"matchLabels": {"app": "nvidia-operator-validator"}},
            "template": {
                "metadata": {"labels": {"app": "nvidia-operator-validator"}},
                "spec": {"containers": [{"image": image}]},
            },
        },
    }


def test_held_operands_switch_to_on_delete_are_renewed_per_wave_and_the_strategy_is_restored():
    api = FakeAPI(NAMES)
    api.cp["spec"]["daemonsets"]["updateStrategy"] = "RollingUpdate"
    api.daemonsets = [held_validator("validator:v2")]
    c = canary(api)
    _plan, rec, nodes, cp = planned(api, c)
    c.prepare(rec, nodes, cp, {}, hold_operands=True)
    assert [w[2] for w in api.writes if w[2].startswith("ClusterPolicy")][0] == (
        "ClusterPolicy cluster-policy: set spec.daemonsets toleration gpuops.io/canary-upgrade:NoSchedule and "
        "updateStrategy=OnDelete"
    )
    assert api.cp["spec"]["daemonsets"]["updateStrategy"] == "OnDelete"
    assert record(api)["operand_strategy"] == "RollingUpdate"
    out = c.run_wave(rec, 0, {"policy": "evict"})
    # the fake's validator pods carry no image: every one on the wave's nodes differs from the template
    assert out["operands_renewed"] == ["gpu-operator/val-a-0", "gpu-operator/val-h-0"]
    c.finish_wave(rec, 0, True)
    c.run_wave(rec, 1, {"policy": "evict"})
    c.finish_wave(rec, 1, True)
    assert api.cp["spec"]["daemonsets"]["updateStrategy"] == "RollingUpdate"


class FakeModule:
    def __init__(self, check_mode=False, **params):
        from ansible_collections.gpuops.gpu_operator.plugins.modules.gpu_canary_upgrade import argspec

        self.params = {k: v.get("default") for k, v in argspec().items()}
        self.params.update(params)
        self.check_mode = check_mode


def run_module(api, check_mode=False, **params):
    from ansible_collections.gpuops.gpu_operator.plugins.modules.gpu_canary_upgrade import execute

    clock = Clock()
    params.setdefault("driver_version", "610.1")
    params.setdefault("canary_nodes", ["a-0", "h-0"])
    return execute(FakeModule(check_mode, **params), api, clock=clock, sleep=clock.sleep)


def test_the_module_keeps_its_record_in_the_namespace_the_clusterpolicy_reports_and_returns_the_names():
    api = FakeAPI(NAMES)
    out = run_module(api, step="plan")
    assert out["operator"]["namespace"] == "gpu-operator" and out["operator"]["namespace_source"] == "cluster_policy"
    assert out["operator"]["cluster_policy"] == "cluster-policy"


def test_a_cluster_policy_name_that_matches_nothing_fails_before_any_write():
    api = FakeAPI(NAMES)
    with pytest.raises(ArgumentError, match="cluster_policy gpu-cluster-policy matches no ClusterPolicy"):
        run_module(api, step="prepare", cluster_policy="gpu-cluster-policy")
    assert api.writes == []


def test_the_module_runs_a_wave_only_after_prepare_and_reports_changed_only_when_it_wrote():
    api = FakeAPI(NAMES)
    with pytest.raises(PlanError, match="run step=prepare first"):
        run_module(api, step="wave", wave=0)
    with pytest.raises(PlanError, match="needs wave"):
        run_module(api, step="finish_wave")
    plan = run_module(api, step="plan")
    assert plan["changed"] is False and api.writes == []
    assert run_module(api, step="prepare")["changed"] is True
    assert run_module(api, step="prepare")["changed"] is False  # idempotent
    out = run_module(api, step="wave", wave=0, poll_interval=0.5)
    assert out["wave"]["wave"]["status"] == WAVE_UPGRADED and out["changed"] is True


def test_the_module_refuses_to_prepare_when_a_running_workloads_cuda_needs_a_newer_driver():
    api = FakeAPI(NAMES)
    api.pods = [
        {
            "metadata": {"name": "trainer", "namespace": "default", "labels": {}},
            "spec": {
                "nodeName": "h-1",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.example.com/ml/trainer:v3",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            },
            "status": {"phase": "Running"},
        }
    ]
    plan = run_module(api, step="plan", driver_version="570.1")["plan"]
    assert plan["gate"]["passed"] and [u["pod"] for u in plan["gate"]["cuda"]["unknown"]] == ["default/trainer"]
    rules = [{"image": "^registry\\.example\\.com/ml/trainer:", "cuda": "13.0"}]
    with pytest.raises(CanaryAbort, match=r"default/trainer .*CUDA 13\.0, which needs driver 580\.65\.06.*570\.1"):
        run_module(api, step="prepare", driver_version="570.1", cuda_images=rules)
    assert api.writes == []
    with pytest.raises(PlanError, match=r"cuda_images\[0\]"):
        run_module(api, step="plan", cuda_images=[{"image": "("}])


def test_a_rollback_needs_no_target_and_one_that_does_not_complete_says_what_is_left_in_sentences():
    api = FakeAPI(NAMES)
    run_module(api, step="prepare")
    run_module(api, step="wave", wave=0)
    api.failing.add("h-0")  # the old driver does not come back on h-0
    with pytest.raises(CanaryAbort) as exc:
        run_module(api, step="rollback", driver_version=None, canary_nodes=[], wave_timeout=30)
    why = "the operator's upgrade controller set %s=upgrade-failed" % STATE
    assert exc.value.msg == (
        "rollback did not complete: node h-0: %s. Left on the cluster: the progress record (phase rollback-failed). "
        "Run step=rollback (gpu_canary_upgrade_action=rollback with the role; no target needed) again once the nodes "
        "named above can come back; it finishes the cleanup." % why
    )
    assert exc.value.result()["failed_nodes"] == {"h-0": why}
    with pytest.raises(PlanError, match="goes to driver 610.1, not to driver 620.1"):
        run_module(api, step="rollback", driver_version="620.1")


def test_the_status_step_needs_no_target_and_writes_nothing():
    api = FakeAPI(NAMES)
    run_module(api, step="prepare")
    writes = len(api.writes)
    out = run_module(api, step="status", driver_version=None, canary_nodes=[])
    assert len(api.writes) == writes and out["changed"] is False
    status = out["status"]
    assert status["phase"] == "in-progress" and status["unfinished"]
    assert status["waves"][0] == {
        "index": 0,
        "name": "canary",
        "status": "pending",
        "reason": None,
        "nodes": ["a-0", "h-0"],
    }
    assert "the skip label nvidia.com/gpu-driver-upgrade.skip=true on 6 node(s)" in "; ".join(status["leftovers"])


def test_prepare_refuses_a_driver_change_the_operator_does_not_manage_before_any_write():
    api = FakeAPI(NAMES)
    api.cp["spec"]["driver"]["enabled"] = False
    with pytest.raises(CanaryAbort, match="the gate failed: the driver change to 610.1 is refused before any write"):
        run_module(api, step="prepare")
    assert api.writes == []
    # a chart-only upgrade is allowed, and its wave is done without the upgrade controller
    run_module(api, step="prepare", driver_version=None, chart_version="v26.7.1")
    api.stopped = True
    out = run_module(api, step="wave", wave=0, driver_version=None, chart_version="v26.7.1")
    assert out["wave"]["wave"]["status"] == WAVE_UPGRADED


def with_driver_pods_and_gpu_jobs(api, digest="d1"):
    """Every node runs the operator's driver pod with ``digest`` (its DaemonSet's is d1) and one GPU job; the
    ClusterPolicy has driver manager v0.12.0."""
    api.cp["spec"]["driver"]["manager"] = {"version": "v0.12.0"}
    env = [{"name": "DRIVER_CONFIG_DIGEST", "value": digest}]
    owner = [{"kind": "DaemonSet", "name": "nvidia-driver-daemonset"}]
    template = {"containers": [{"name": "nvidia-driver-ctr", "env": [{"name": "DRIVER_CONFIG_DIGEST", "value": "d1"}]}]}
    api.daemonsets.append(
        {
            "metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator"},
            "spec": {"template": {"spec": template}},
        }
    )
    for n in api.nodes:
        labels = {"app.kubernetes.io/component": "nvidia-driver"}
        api.pods.append(
            {
                "metadata": {
                    "name": "drv-" + n,
                    "namespace": "gpu-operator",
                    "labels": labels,
                    "ownerReferences": owner,
                },
                "spec": {"nodeName": n, "containers": [{"name": "nvidia-driver-ctr", "env": env}]},
                "status": {"phase": "Running"},
            }
        )
        api.pods.append(
            {
                "metadata": {"name": "job-" + n, "namespace": "default", "labels": {}},
                "spec": {"nodeName": n, "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": {"phase": "Running"},
            }
        )


def test_a_wave_leaves_the_gpu_jobs_of_nodes_whose_driver_restarts_in_place_running():
    api = FakeAPI(NAMES)
    with_driver_pods_and_gpu_jobs(api)
    c = canary(api)
    values = {"driver": {"manager": {"version": "v0.12.0"}}}
    plan, rec, nodes, cp = c.plan(
        CanaryOptions(chart_version="v26.7.1", canary_nodes=["a-0", "h-0"], chart_values=values)
    )
    assert plan["disruption"]["in_place"] == sorted(NAMES) and plan["disruption"]["evicted_workloads"] == 0
    c.prepare(rec, nodes, cp, {})
    out = c.run_wave(rec, 0, {"policy": "evict"})
    assert out["evicted"] == []
    assert {"job-a-0", "job-h-0"} <= {p["metadata"]["name"] for p in api.pods}


def test_the_module_refuses_a_plan_that_evicts_more_workloads_than_allowed_before_any_write():
    api = FakeAPI(NAMES)
    with_driver_pods_and_gpu_jobs(api)
    with pytest.raises(
        CanaryAbort, match=r"the plan evicts 6 GPU workload pod\(s\), more than max_evicted_workloads=5"
    ):
        run_module(api, step="prepare", max_evicted_workloads=5)
    assert api.writes == []
    assert run_module(api, step="plan", max_evicted_workloads=6)["plan"]["gate"]["passed"] is True
