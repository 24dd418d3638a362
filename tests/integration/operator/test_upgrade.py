"""Driver upgrade state machine - NVIDIA's own (k8s-operator-libs pkg/upgrade, run by the bed's upgrade controller in
tests/sim/upgrade-controller): a version bump walks every node to upgrade-done, within maxParallelUpgrades, leaving
skipped nodes alone; a driver that fails to load fails it, a job it waits for stalls it."""

from __future__ import annotations

import contextlib
import time

from kubernetes.client.rest import ApiException

from tests.integration.simop_helpers import NS, NodeRecorder, wait_for

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
ORDER = [
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
]
IN_PROGRESS = set(ORDER[1:7])


def _driver_version(op, n):
    return op.node(n).metadata.labels.get("nvidia.com/cuda.driver-version.full")


def _gpu_pod(op, n, name, app="gpu-job"):
    body = {
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {
            "nodeName": n,
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "cuda:sample", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
    op.core.create_namespaced_pod("default", body)


def test_version_bump_walks_nodes_in_order_respecting_parallelism_and_skip(gpu_operator):
    op = gpu_operator
    op.wait_healthy()
    nodes = sorted(op.gpu_nodes)
    skipped = nodes[-1]
    upgrading = nodes[:-1]
    op.label(skipped, **{SKIP: "true"})
    _gpu_pod(op, upgrading[0], "gpu-job-upgrade")
    wait_for(
        lambda: op.core.read_namespaced_pod("gpu-job-upgrade", "default").status.phase == "Running",
        20,
        what="GPU pod running",
    )
    rec = NodeRecorder(op.api, STATE).start()
    reasons = set()  # the ClusterPolicy's Ready reason seen while the upgrade ran

    def upgraded():
        conditions = (op.cp().get("status") or {}).get("conditions") or []
        reasons.update(c.get("reason") for c in conditions if c.get("type") == "Ready")
        return all(
            op.node(n).metadata.labels.get(STATE) == "upgrade-done" and _driver_version(op, n) == "610.57.04"
            for n in upgrading
        )

    try:
        # NVIDIA's pod deletion refuses a GPU pod that no controller owns unless podDeletion.force is set (the chart's
        # default is false): without it the node goes upgrade-failed
        policy = {"maxParallelUpgrades": 1, "podDeletion": {"force": True}}
        op.patch_cp({"driver": {"version": "610.57.04", "upgradePolicy": policy}})
        wait_for(upgraded, 90, what="upgrade-done on every non-skipped node")
        time.sleep(1)
    finally:
        rec.stop()
    for n in upgrading:
        seq = [s for s in rec.seq.get(n, []) if s]
        assert seq[seq.index("upgrade-required") :] == ORDER, (n, seq)
        assert not op.node(n).spec.unschedulable
    assert op.node(skipped).metadata.labels.get(STATE) == "upgrade-required"
    assert _driver_version(op, skipped) == "595.91.07"
    assert [s for s in rec.seq.get(skipped, []) if s] in (["upgrade-done", "upgrade-required"], ["upgrade-required"])
    peak = max(sum(1 for v, _u in snap.values() if v in IN_PROGRESS) for snap in rec.snapshots)
    assert peak <= 1
    # operator 26.7: the ClusterPolicy stays notReady while a node is mid-upgrade (the held node does not count)
    assert "DriverUpgradeInProgress" in reasons, reasons
    pods = op.core.list_namespaced_pod("default", label_selector="app=gpu-job").items
    assert not [p for p in pods if p.metadata.name == "gpu-job-upgrade" and not p.metadata.deletion_timestamp]
    ev = [e for e in op.events("default", reason="GPUDriverUpgrade") if e.involved_object.name in upgrading]
    assert any(e.message == "Successfully updated node state label to cordon-required" for e in ev)
    # release the skipped node: it upgrades too
    op.label(skipped, **{SKIP: None})
    wait_for(
        lambda: (
            op.node(skipped).metadata.labels.get(STATE) == "upgrade-done"
            and _driver_version(op, skipped) == "610.57.04"
        ),
        60,
        what="released node upgraded",
    )
    op.wait_healthy()


def test_parallel_upgrades_bounded(gpu_operator):
    op = gpu_operator
    op.wait_healthy()
    rec = NodeRecorder(op.api, STATE).start()
    try:
        op.patch_cp(
            {"driver": {"version": "580.173.02", "upgradePolicy": {"maxParallelUpgrades": 2, "maxUnavailable": "100%"}}}
        )
        wait_for(
            lambda: all(
                op.node(n).metadata.labels.get(STATE) == "upgrade-done" and _driver_version(op, n) == "580.173.02"
                for n in op.gpu_nodes
            ),
            90,
            what="all nodes upgraded",
        )
    finally:
        rec.stop()
    peak = max(sum(1 for v, _u in snap.values() if v in IN_PROGRESS) for snap in rec.snapshots)
    assert 1 <= peak <= 2
    op.patch_cp({"driver": {"upgradePolicy": {"maxParallelUpgrades": 1, "maxUnavailable": "25%"}}})
    op.wait_healthy()


def test_a_driver_that_fails_to_load_fails_the_upgrade_and_a_job_waited_for_stalls_it(gpu_operator):
    op = gpu_operator
    op.wait_healthy()
    nodes = sorted(op.gpu_nodes)
    failing, stuck = nodes[0], nodes[1]
    op.fault(failing, "upgrade-failed")
    _gpu_pod(op, stuck, "long-job", app="long-job")
    wait_for(
        lambda: op.core.read_namespaced_pod("long-job", "default").status.phase == "Running", 20, what="job running"
    )
    for n in nodes[2:]:
        op.label(n, **{SKIP: "true"})
    policy = {"maxParallelUpgrades": 0, "maxUnavailable": "100%", "waitForCompletion": {"podSelector": "app=long-job"}}
    try:
        op.patch_cp({"driver": {"version": "595.91.07", "upgradePolicy": policy}})
        wait_for(lambda: op.node(failing).metadata.labels.get(STATE) == "upgrade-failed", 60, what="upgrade-failed")
        wait_for(
            lambda: op.node(stuck).metadata.labels.get(STATE) == "wait-for-jobs-required",
            60,
            what="wait-for-jobs-required",
        )
        time.sleep(3)
        assert op.node(stuck).metadata.labels.get(STATE) == "wait-for-jobs-required"
        assert op.node(stuck).spec.unschedulable
        assert op.node(failing).metadata.labels.get(STATE) == "upgrade-failed"
        # the driver pod was restarted more than 10 times and is not ready: NVIDIA's "repeated restarts"
        drv = [
            p
            for p in op.core.list_namespaced_pod(NS, field_selector=f"spec.nodeName={failing}").items
            if (p.metadata.labels or {}).get("app.kubernetes.io/component") == "nvidia-driver"
        ]
        assert any(cs.restart_count > 10 and not cs.ready for p in drv for cs in p.status.container_statuses or [])
        # the causes go: the controller moves on by itself, no relabel needed (a ready driver pod in sync with its
        # DaemonSet takes upgrade-failed to uncordon-required)
        op.fault(failing, None)
        op.core.delete_namespaced_pod("long-job", "default", grace_period_seconds=0)
        wait_for(
            lambda: all(op.node(n).metadata.labels.get(STATE) == "upgrade-done" for n in (failing, stuck)),
            60,
            what="both nodes upgrade-done",
        )
        assert not op.node(failing).spec.unschedulable and not op.node(stuck).spec.unschedulable
    finally:
        op.fault(failing, None)
        with contextlib.suppress(ApiException):
            op.core.delete_namespaced_pod("long-job", "default", grace_period_seconds=0)
        for n in nodes[2:]:
            op.label(n, **{SKIP: None})
        reset = {"maxParallelUpgrades": 1, "maxUnavailable": "25%", "waitForCompletion": {"podSelector": ""}}
        op.patch_cp({"driver": {"upgradePolicy": reset}})
    wait_for(
        lambda: all(op.node(n).metadata.labels.get(STATE) == "upgrade-done" for n in op.gpu_nodes), 90, what="all done"
    )
    op.wait_healthy()
