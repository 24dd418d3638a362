"""Specs for explaining a driver upgrade that does not move: per node its state, since when (the upgrade controller's
own Event, else its start-time annotations), the cause the cluster shows and the fix as a command."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_stalls import (
    diagnose,
    read_stalls,
    seconds_of,
    stall_lines,
)

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
NOW = seconds_of("2026-12-06T08:00:00Z")


def node(name, state, cordoned=False, ready=True, labels=None, annotations=None):
    return {
        "metadata": {"name": name, "labels": {STATE: state, **(labels or {})}, "annotations": annotations or {}},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name, on, ns="default", labels=None, gpu=False, phase="Running", ready=True, **meta):
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}} if gpu else {}}
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, **meta},
        "spec": {"nodeName": on, "containers": [container]},
        "status": {"phase": phase, "containerStatuses": [{"name": "c", "ready": ready}]},
    }


def moved(name, state, at, typ="Normal", message=None):
    return {
        "involvedObject": {"kind": "Node", "name": name},
        "type": typ,
        "reason": "GPUDriverUpgrade",
        "message": message or "Successfully updated node state label to " + state,
        "lastTimestamp": at,
    }


def one(nodes, pods=(), pdbs=(), events=(), policy=None):
    cp = {"metadata": {"name": "cluster-policy"}, "spec": {"driver": {"upgradePolicy": policy or {}}}}
    found = diagnose(nodes, list(pods), list(pdbs), list(events), cp, NOW)
    return {e["node"]: e for e in found}


def test_done_nodes_are_left_out_and_the_time_comes_from_the_controllers_event_for_the_current_state():
    nodes = [node("a", "upgrade-done"), node("b", "upgrade-required", labels={SKIP: "true"})]
    events = [
        moved("b", "upgrade-done", "2026-12-06T07:00:00Z"),
        moved("b", "upgrade-required", "2026-12-06T07:55:00Z"),
    ]
    got = one(nodes, events=events)
    assert set(got) == {"b"}
    assert got["b"]["since"] == "2026-12-06T07:55:00Z" and got["b"]["seconds"] == 300


def test_the_recorders_combined_event_still_dates_the_state():
    combined = "(combined from similar events): Successfully updated node state label to drain-required"
    events = [moved("a", "", "2026-12-06T07:59:00Z", message=combined)]
    got = one([node("a", "drain-required", cordoned=True)], events=events)["a"]
    assert got["since"] == "2026-12-06T07:59:00Z" and got["seconds"] == 60


def test_without_an_event_the_state_labels_field_manager_dates_it():
    a = node("a", "drain-required", cordoned=True)
    a["metadata"]["managedFields"] = [
        {"manager": "kube-controller-manager", "time": "2026-12-06T07:59:50Z", "fieldsV1": {"f:status": {}}},
        {
            "manager": "upgrade-controller",
            "time": "2026-12-06T07:58:00Z",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:" + STATE: {}}}},
        },
    ]
    got = one([a])["a"]
    assert got["since"] == "2026-12-06T07:58:00Z" and got["seconds"] == 120


def test_a_node_held_by_the_skip_label():
    got = one([node("b", "upgrade-required", labels={SKIP: "true"})])["b"]
    assert got["stalled"] and "skip label" in got["cause"]
    assert got["fix"] == "kubectl label node b %s-" % SKIP


def test_max_unavailable_used_up_by_unrelated_unavailable_nodes():
    nodes = [node("a", "upgrade-required"), node("q", "upgrade-done", cordoned=True), node("r", "upgrade-done")]
    nodes.append(node("s", "upgrade-done", ready=False))
    got = one(nodes, policy={"maxUnavailable": "50%"})["a"]
    assert got["stalled"]
    assert (
        "maxUnavailable 50% of 4 node(s) = 2, used up by 2 unavailable node(s), 2 of them not upgrading" in got["cause"]
    )
    assert "q (cordoned)" in got["cause"] and "s (NotReady)" in got["cause"]
    assert got["fix"].startswith("kubectl uncordon q")
    assert '"maxUnavailable":3' in got["fix"]


def test_a_free_slot_is_no_stall_and_a_taken_parallel_slot_is_waited_for():
    nodes = [node("a", "upgrade-required"), node("b", "upgrade-done")]
    assert not one(nodes, policy={"maxUnavailable": "100%"})["a"]["stalled"]
    nodes = [node("a", "upgrade-required"), node("b", "validation-required", cordoned=True)]
    got = one(nodes, policy={"maxUnavailable": "100%", "maxParallelUpgrades": 1})["a"]
    assert not got["stalled"] and "maxParallelUpgrades=1 taken by b (validation-required)" in got["cause"]


def test_drain_blocked_by_a_pod_disruption_budget():
    pdb = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1},
    }
    web = pod("web-0", "a", ns="shop", labels={"app": "web"})
    got = one([node("a", "drain-required", cordoned=True)], pods=[web], pdbs=[pdb])["a"]
    assert got["stalled"]
    assert "pod shop/web-0 is refused: PodDisruptionBudget shop/web allows 0 disruptions" in got["cause"]
    assert got["fix"].startswith("kubectl -n shop delete pod web-0")


class StubClient:
    """The LISTs read_stalls makes, from memory (``list_all`` answers ``(items, list metadata)`` like the client)."""

    def __init__(self, pods=(), pdbs=(), events=()):
        self.pods, self.pdbs, self.events, self.reads = list(pods), list(pdbs), list(events), []

    def list_core(self, resource, namespace=None, **kwargs):
        self.reads.append(resource)
        return {"pods": self.pods, "events": self.events}[resource]

    def list_all(self, path, **kwargs):
        self.reads.append(path.rsplit("/", 1)[1])
        return self.pdbs, {"resourceVersion": "1"}


def test_read_stalls_reads_pods_budgets_and_events_only_while_an_upgrade_is_not_done():
    pdb = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1},
    }
    client = StubClient(pods=[pod("web-0", "a", ns="shop", labels={"app": "web"})], pdbs=[pdb])
    assert read_stalls(client, [node("a", "upgrade-done")], None, 500, NOW) == [] and client.reads == []
    (got,) = read_stalls(client, [node("a", "drain-required", cordoned=True)], {"metadata": {"name": "cp"}}, 500, NOW)
    assert client.reads == ["pods", "poddisruptionbudgets", "events"]
    assert "PodDisruptionBudget shop/web allows 0 disruptions" in got["cause"] and got["stalled"]


def test_a_pod_stuck_terminating_with_its_finalizer():
    stuck = pod("train", "a", gpu=True, deletionTimestamp="2026-12-06T07:50:00Z", finalizers=["example.com/hold"])
    got = one([node("a", "pod-deletion-required", cordoned=True)], pods=[stuck])["a"]
    assert got["stalled"] and "default/train is stuck terminating since 2026-12-06T07:50:00Z" in got["cause"]
    assert "example.com/hold" in got["cause"]
    assert got["fix"] == 'kubectl -n default patch pod train --type merge -p \'{"metadata":{"finalizers":null}}\''


def test_a_validator_pod_never_ready_dated_by_the_validation_start_annotation():
    start = {"nvidia.com/gpu-driver-upgrade-validation-start-time": str(NOW - 120)}
    validator = pod("val", "a", ns="gpu-operator", labels={"app": "nvidia-operator-validator"}, ready=False)
    got = one([node("a", "validation-required", cordoned=True, annotations=start)], pods=[validator])["a"]
    assert got["stalled"] and got["seconds"] == 120
    assert "validator pod gpu-operator/val is not ready" in got["cause"] and "after 600 s" in got["cause"]
    assert got["fix"] == "kubectl -n gpu-operator logs val --all-containers --previous"


def test_upgrade_failed_by_a_driver_that_does_not_load_and_by_a_refused_pod_deletion():
    driver = pod("drv", "a", ns="gpu-operator", labels={"app.kubernetes.io/component": "nvidia-driver"}, ready=False)
    driver["status"]["containerStatuses"][0].update(
        restartCount=11,
        state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": {"message": "modprobe failed\nKey was rejected by service"}},
    )
    got = one([node("a", "upgrade-failed", cordoned=True)], pods=[driver])["a"]
    assert got["stalled"]
    assert "container c CrashLoopBackOff, restarted 11 times: Key was rejected by service" in got["cause"]
    assert "moves the node on by itself" in got["cause"]
    warning = moved("b", "", "2026-12-06T07:59:00Z", "Warning", "Failed to delete workload pods on the node")
    ready_driver = pod("drv2", "b", ns="gpu-operator", labels={"app.kubernetes.io/component": "nvidia-driver"})
    got = one([node("b", "upgrade-failed", cordoned=True)], pods=[ready_driver], events=[warning])["b"]
    assert got["cause"] == "failed: Failed to delete workload pods on the node"
    assert got["fix"] == "kubectl label node b %s=upgrade-required --overwrite" % STATE


def test_jobs_waited_for_and_the_lines_for_people():
    job = pod("long", "a", labels={"app": "batch"})
    got = one(
        [node("a", "wait-for-jobs-required", cordoned=True)],
        pods=[job],
        policy={"waitForCompletion": {"podSelector": "app=batch"}},
    )
    assert got["a"]["stalled"] and "default/long" in got["a"]["cause"] and "no timeout" in got["a"]["cause"]
    line = stall_lines(list(got.values()))[0]
    assert line.startswith("  a: wait-for-jobs-required since an unknown time; stalled: waiting for 1 pod(s)")
    assert line.endswith("Fix: kubectl -n default delete pod long  # or wait for it to finish")
