"""Stalled driver upgrades, reproduced with NVIDIA's own upgrade controller (the bed's tests/sim/upgrade-controller),
each explained by the canary's status step on a cluster the canary never touched (no record): the node, its state,
for how long, the cause the cluster shows and the fix as a command. Each spec bumps the ClusterPolicy's driver as a
user would (every node at once: maxParallelUpgrades 0, maxUnavailable 100%), so only the node under test stalls;
then it removes the cause and the upgrade finishes."""

from __future__ import annotations

import re

import pytest
from canary_helpers import NS, SKIP, STATE, wait_for

from tests.integration.helpers import module_runner

TARGET = "h100-3"
VERSIONS = iter(f"610.{n}.01" for n in range(60, 80))
ALL_AT_ONCE = {"maxParallelUpgrades": 0, "maxUnavailable": "100%"}


def bump(bed, **policy):
    """The ClusterPolicy's driver bumped to a new version with the upgrade policy merged in; the version."""
    version = next(VERSIONS)
    body = {"spec": {"driver": {"version": version, "upgradePolicy": {**ALL_AT_ONCE, **policy}}}}
    bed.custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy", body)
    return version


def state(bed, node):
    return (bed.core.read_node(node).metadata.labels or {}).get(STATE)


def wait_state(bed, node, want, timeout=240):
    """Every node upgrades at once (ALL_AT_ONCE), so on a busy machine the controller's passes take a while."""
    wait_for(lambda: state(bed, node) == want, timeout, what=f"{node} in {want}")


def reported(bed, node, want_state):
    """The status step's line for ``node`` (the playbook's output), asserting the read-only run and the state."""
    out = bed.status()
    assert "No canary upgrade is recorded" in out, out[-3000:]
    assert "Driver upgrades not done (NVIDIA's upgrade controller)" in out, out[-3000:]
    line = next((x for x in out.splitlines() if x.strip().strip('",').strip().startswith(f"{node}: ")), None)
    assert line is not None, out[-3000:]
    assert f"{node}: {want_state} for " in line and re.search(r"for \d+ s \(since 20\d\d-", line), line
    line = line.replace('\\"', '"')
    # gpu_cluster_info (read-only, the day-2 identity) gives the same diagnosis: one judgement, two readers
    info = module_runner(bed.t, bed.work, "gpu_cluster_info")(kubeconfig=bed.t.day2_kubeconfig)
    entry = next((e for e in info["driver_upgrades"] if e["node"] == node), None)
    assert entry is not None and entry["state"] == want_state, info["driver_upgrades"]
    assert entry["cause"][:40] in line and entry["stalled"] == ("stalled: " in line), (entry, line)
    return line


def all_done(bed, version, timeout=120):
    wait_for(
        lambda: all(
            s["driver"] == version and s["labels"].get(STATE) == "upgrade-done" for s in bed.snapshot().values()
        ),
        timeout,
        what=f"every GPU node on driver {version}",
    )


@pytest.fixture
def target(clean):
    """The node under test, its workloads and faults removed after the spec."""
    yield TARGET
    clean.fault(TARGET, None)
    clean.delete_gpu_workloads()


def test_a_node_held_by_the_skip_label(clean, target):
    clean.core.patch_node(target, {"metadata": {"labels": {SKIP: "true"}}})
    version = bump(clean)
    wait_state(clean, target, "upgrade-required")
    wait_for(lambda: clean.driver_pod_version("a100-0") == version, 90, what="the other nodes upgraded")
    line = reported(clean, target, "upgrade-required")
    assert "stalled: held by the skip label nvidia.com/gpu-driver-upgrade.skip=true" in line
    assert line.rstrip('",').endswith(f"Fix: kubectl label node {target} {SKIP}-")
    clean.core.patch_node(target, {"metadata": {"labels": {SKIP: None}}})
    all_done(clean, version)


def test_max_unavailable_used_up_by_an_unrelated_cordoned_node(clean, target):
    quarantined = "a100-5"
    clean.core.patch_node(quarantined, {"spec": {"unschedulable": True}})
    try:
        version = bump(clean, maxUnavailable=1)
        # a cordoned node goes past the limit and stays cordoned: once upgraded, it is what uses the budget up
        wait_for(lambda: clean.driver_pod_version(quarantined) == version, 90, what=f"{quarantined} upgraded")
        wait_state(clean, quarantined, "upgrade-done")
        wait_state(clean, target, "upgrade-required")
        line = reported(clean, target, "upgrade-required")
        assert "stalled: maxUnavailable 1 of 20 node(s) = 1, used up by 1 unavailable node(s), 1 of them not" in line
        assert f"{quarantined} (cordoned)" in line and f"Fix: kubectl uncordon {quarantined}" in line
    finally:
        clean.core.patch_node(quarantined, {"spec": {"unschedulable": None}})
    all_done(clean, version)


def test_a_drain_blocked_by_a_pod_disruption_budget(clean, target):
    clean.gpu_pod("web-0", target, {"app": "web"})
    clean.pdb("web", {"app": "web"})
    wait_for(lambda: clean.pdb_allowed("web") == 0, 30, what="the budget allowing no disruption")
    # pod deletion refuses the bare pod (no force), so the controller drains the node; the drain's eviction waits on
    # the budget for ever (timeoutSeconds 0)
    drain = {"enable": True, "force": True, "timeoutSeconds": 0, "podSelector": ""}
    version = bump(clean, podDeletion={"force": False, "timeoutSeconds": 5}, drain=drain)
    wait_state(clean, target, "drain-required")
    line = reported(clean, target, "drain-required")
    assert "stalled: the eviction of pod default/web-0 is refused: PodDisruptionBudget default/web allows 0" in line
    assert "Fix: kubectl -n default delete pod web-0" in line
    clean.core.delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    all_done(clean, version)
    clean.custom.patch_cluster_custom_object(
        "nvidia.com",
        "v1",
        "clusterpolicies",
        "cluster-policy",
        {"spec": {"driver": {"upgradePolicy": {"drain": None}}}},
    )


def test_a_pod_stuck_terminating(clean, target):
    clean.gpu_pod("held", target, {"app": "held"})
    clean.core.patch_namespaced_pod("held", "default", {"metadata": {"finalizers": ["gpuops.io/test-hold"]}})
    version = bump(clean, podDeletion={"force": True, "timeoutSeconds": 0})
    wait_state(clean, target, "pod-deletion-required")
    wait_for(lambda: not clean.pod_alive("held"), 30, what="the pod terminating")
    line = reported(clean, target, "pod-deletion-required")
    assert "stalled: pod default/held is stuck terminating since 20" in line and "gpuops.io/test-hold" in line
    assert "Fix: kubectl -n default patch pod held --type merge -p '{\"metadata\":{\"finalizers\":null}}'" in line
    clean.core.patch_namespaced_pod("held", "default", {"metadata": {"finalizers": None}})
    all_done(clean, version)


def test_a_validator_pod_never_ready(clean, target):
    clean.fault(target, "validator-failing")
    version = bump(clean)
    wait_state(clean, target, "validation-required")
    line = reported(clean, target, "validation-required")
    assert re.search(rf"stalled: validator pod {NS}/nvidia-operator-validator-\S+ is not ready: container", line), line
    assert "CrashLoopBackOff" in line and "the controller fails the node after 600 s" in line
    assert f"Fix: kubectl -n {NS} logs nvidia-operator-validator-" in line and "--all-containers --previous" in line
    clean.fault(target, None)
    all_done(clean, version)


def test_upgrade_failed_waiting_for_a_retry(clean, target):
    clean.fault(target, "upgrade-failed")
    version = bump(clean)
    wait_state(clean, target, "upgrade-failed")
    line = reported(clean, target, "upgrade-failed")
    assert re.search(rf"stalled: driver pod {NS}/\S+ is not ready: container nvidia-driver-ctr CrashLoopBackOff", line)
    assert "restarted 11 times: ERROR: Unable to load the kernel module" in line
    assert "the controller moves the node on by itself once the driver pod runs ready" in line
    assert f"Fix: kubectl -n {NS} logs nvidia-driver-daemonset-" in line
    # the cause goes: NVIDIA's controller takes the node from upgrade-failed on by itself, no relabel
    clean.fault(target, None)
    all_done(clean, version)
