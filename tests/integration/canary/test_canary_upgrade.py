"""playbooks/upgrade.yml on a 20-node, two-pool test bed with the simulated GPU Operator's upgrade controller.

Each test moves the driver to a version of its own; the `clean` fixture puts every node back on the
ClusterPolicy's driver, without canary leftovers, before and after. Tests run in file order: the chart upgrade,
which cannot be undone, is last.
"""

from __future__ import annotations

import re
import time

from canary_helpers import CANARY, FAILED, NS, REPO_ROOT, SKIP, STATE, TAINT, wait_for

DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"


def _tolerates(tolerations, key):
    return any(t.get("key") == key for t in tolerations or [])


def _assert_upgraded(cb, nodes, target, taint_key=TAINT):
    snap = cb.snapshot()
    for n in nodes:
        s = snap[n]
        assert s["driver"] == target, (n, s["driver"])
        assert cb.driver_pod_version(n) == target, n
        assert s["labels"].get(STATE) == "upgrade-done", (n, s["labels"].get(STATE))
        assert SKIP not in s["labels"], n
        assert not [t for t in s["taints"] if t[0] == taint_key], (n, s["taints"])
        assert not s["unschedulable"], n
        assert FAILED not in s["annotations"], n


def _other_labels(labels):
    """The labels but the upgrade controller's state, our skip label and the GPU-client deploy label, which
    operator 26.7.0 sets on every GPU node as soon as it runs (not the canary's doing)."""
    return {k: v for k, v in labels.items() if k not in (SKIP, STATE, "nvidia.com/gpu.deploy.client")}


def _assert_untouched(before, after, nodes):
    """Driver, labels (but the operator's upgrade-required and our skip label), taints and cordon as before."""
    for n in nodes:
        b, a = before[n], after[n]
        assert a["driver"] == b["driver"], (n, a["driver"], b["driver"])
        assert a["labels"].get(SKIP) == "true", n
        assert a["labels"].get(STATE) == "upgrade-required", (n, a["labels"].get(STATE))
        assert _other_labels(a["labels"]) == _other_labels(b["labels"]), n
        assert a["taints"] == b["taints"], (n, a["taints"])
        assert not a["unschedulable"], n
        assert FAILED not in a["annotations"], n


def test_check_mode_prints_the_whole_plan_and_writes_nothing(clean):
    before = clean.snapshot()
    mark = clean.t.audit_mark()
    r = clean.playbook(
        check=True, gpu_canary_upgrade_driver_version="610.10.01", gpu_canary_upgrade_waves=[1, "50%", "100%"]
    )
    assert r.returncode == 0, r.output[-3000:]
    assert clean.t.audit_writes(mark) == []
    out = r.output
    assert "Every node not in the current wave carries nvidia.com/gpu-driver-upgrade.skip=true." in out
    assert (
        "canary [pending] taint gpuops.io/canary-upgrade=canary:NoSchedule, remove skip label, upgrade: a100-0, h100-0"
        in out
    )
    assert (
        "wave-1 [pending] taint gpuops.io/canary-upgrade=wave-1:NoSchedule, remove skip label, upgrade: a100-1" in out
    )
    # 50% of the 18 other nodes: the second wave brings the total to 9, alternating pools
    assert (
        "wave-2 [pending] taint gpuops.io/canary-upgrade=wave-2:NoSchedule, remove skip label, upgrade: "
        "h100-1, a100-2, h100-2, a100-3, h100-3, a100-4, h100-4, a100-5" in out
    )
    assert "wave-3 [pending]" in out and "h100-11" in out
    # how each planned node's driver restarts: v26.3.3 has no in-place restart
    assert "Driver restart (operator v26.3.3): in place on none; full flow on a100-0, a100-1," in out
    assert "a100-0: driver restart full (operator v26.3.3 has no in-place driver restart (from v26.7.0 on))" in out
    assert re.search(r"\.\.\. and \d+ more node\(s\) \(in the plan\)", out)  # per-node lines capped
    # the preparation's writes are listed, none made
    assert "node h100-7: hold the upgrade (skip label)" in out
    assert "ClusterPolicy cluster-policy: set spec.driver" in out and "version=610.10.01" in out
    after = clean.snapshot()
    for n in before:
        assert after[n]["labels"] == before[n]["labels"] and after[n]["taints"] == before[n]["taints"], n
    assert clean.record() is None


def test_the_baseline_gate_stops_the_run_with_its_report_before_any_write(clean):
    mark = clean.t.audit_mark()
    r = clean.playbook(
        gpu_canary_upgrade_baseline=True,
        gpu_nvml_library=str(REPO_ROOT / "build" / "nvml" / "libnvidia-ml.so.1"),
        gpu_canary_upgrade_driver_version="610.70.01",  # not in the compatibility matrix for 26.x
    )
    assert r.returncode != 0
    assert "fail driver.target_supported on the cluster: driver 610.70.01 is not listed" in r.output, r.output[-3000:]
    assert "GPU baseline fail" in r.output
    assert "Plan the upgrade and run the gate" not in r.output
    # only the permission questions of the gate (SelfSubjectAccessReviews persist nothing)
    writes = clean.t.audit_writes(mark)
    assert writes and {w["objectRef"]["resource"] for w in writes} == {"selfsubjectaccessreviews"}
    assert clean.record() is None


def test_a_running_workloads_cuda_version_newer_than_the_target_driver_fails_the_gate_before_any_write(clean):
    image = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu22.04"
    clean.gpu_pod("cuda13", "h100-5", {"app": "cuda13"}, image=image)
    clean.gpu_pod("custom", "a100-4", {"app": "custom"})  # cuda:sample - not knowable
    try:
        mark = clean.t.audit_mark()
        r = clean.playbook(gpu_canary_upgrade_driver_version="570.72.01")
        assert r.returncode != 0
        assert "Canary upgrade gate failed" in r.output, r.output[-3000:]
        assert (
            "pod default/cuda13 (container c, image %s) runs CUDA 13.0, which needs driver 580.65.06 or later; "
            "the target driver 570.72.01 is older" % image
        ) in r.output
        assert "unknown CUDA (info): default/custom (cuda:sample)" in r.output
        assert "default/custom (container" not in r.output  # listed, never a failure
        assert clean.t.audit_writes(mark) == []
        assert clean.record() is None
    finally:
        clean.delete_gpu_workloads()


def test_gpu_jobs_are_evicted_through_the_eviction_api_and_a_pdb_that_refuses_stops_the_canary(clean):
    before = clean.snapshot()
    clean.gpu_pod("evictable", "h100-0", {"app": "evictable"})
    clean.gpu_pod("protected", "a100-0", {"app": "protected"})
    clean.pdb("protected", {"app": "protected"})
    try:
        wait_for(lambda: clean.pdb_allowed("protected") == 0, 30, what="the PDB to allow no disruption")
        r = clean.playbook(gpu_canary_upgrade_driver_version="610.80.01", gpu_canary_upgrade_eviction_timeout=6)
        assert r.returncode != 0
        assert "could not be evicted within 6 s: default/protected" in r.output, r.output[-3000:]
        # the gate listed the job and its budget
        assert "PDBs: default/protected" in r.output
        assert not clean.pod_alive("evictable")  # evicted
        assert clean.pod_alive("protected")  # the budget held
        after = clean.snapshot()
        # nothing was released: every node, the canary included, keeps its old driver and its skip label
        for n in after:
            assert after[n]["driver"] == before[n]["driver"] and after[n]["labels"].get(SKIP) == "true", n
        assert clean.record()["phase"] == "aborted"
    finally:
        clean.delete_gpu_workloads()


def test_happy_path_with_a_custom_taint_the_operands_did_not_tolerate(clean):
    key = "example.com/gpu-canary"
    before = clean.prepared_objects()
    assert not _tolerates(before["cluster_policy"]["daemonsets"].get("tolerations"), key)
    assert not _tolerates(before["nfd_worker"]["template"]["spec"].get("tolerations"), key)
    target = "610.20.01"
    r = clean.playbook(
        gpu_canary_upgrade_driver_version=target,
        gpu_canary_upgrade_taint_key=key,
        gpu_canary_upgrade_waves=["50%", "100%"],
    )
    assert r.returncode == 0, r.output[-4000:]
    # the nodes were held by the skip label first (the toleration changes the driver's pod template, which NVIDIA's
    # upgrade controller takes for an upgrade of every node not held), then the operands and NFD were made to
    # tolerate the taint before the wave (otherwise the canary's new driver pod never schedules on the tainted
    # node), and after the last wave the preparation is taken back but those tolerations (every operand pod carries
    # them; taking them back would restart them all): the version moved, nothing else
    prepared = r.output.index("ClusterPolicy cluster-policy: set spec.daemonsets toleration %s:NoSchedule" % key)
    assert r.output.index("hold the upgrade (skip label)") < prepared < r.output.index("DaemonSet gpu-operator/")
    after = clean.prepared_objects()
    ours = {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    after["nfd_worker"]["template"]["spec"]["tolerations"].remove(ours)
    assert after["nfd_worker"] == before["nfd_worker"]
    after["cluster_policy"]["daemonsets"]["tolerations"].remove(ours)
    assert after["cluster_policy"]["driver"].pop("version") == target
    before["cluster_policy"]["driver"].pop("version")
    assert after["cluster_policy"] == before["cluster_policy"]
    _assert_upgraded(clean, clean.gpu_node_names(), target, taint_key=key)
    rec = clean.record()
    assert rec["phase"] == "done"
    assert [w["name"] for w in rec["waves"]] == ["canary", "wave-1", "wave-2"]
    assert [w["status"] for w in rec["waves"]] == ["proven"] * 3
    assert rec["waves"][0]["nodes"] == CANARY
    # each wave started only after the one before it was proven
    for prev, nxt in zip(rec["waves"], rec["waves"][1:]):
        assert prev["finished"] <= nxt["started"], (prev, nxt)
    assert rec["skip_labelled"] == []
    # the status of a finished upgrade: every wave proven, nothing left
    out = clean.status()
    assert "phase done" in out and "wave-2 [proven]: 9 node(s)" in out
    assert "Nothing of a canary upgrade is left on the cluster." in out
    assert "Kept after the upgrade: the canary toleration %s:NoSchedule on the operands of ClusterPolicy" % key in out


def test_a_fault_in_the_canary_aborts_with_every_other_node_untouched_and_rolls_back_on_request(clean):
    before = clean.snapshot()
    objects = clean.prepared_objects()
    clean.fault("h100-0", "upgrade-failed")
    r = clean.playbook(gpu_canary_upgrade_driver_version="610.30.01", gpu_canary_upgrade_waves=["100%"])
    assert r.returncode != 0
    assert "Canary upgrade aborted in canary" in r.output, r.output[-3000:]
    time.sleep(3)  # give the upgrade controller a few passes: nothing else may move
    after = clean.snapshot()
    failed = after["h100-0"]
    assert failed["labels"][STATE] == "upgrade-failed"
    assert "canary" in failed["annotations"][FAILED] and "upgrade-failed" in failed["annotations"][FAILED]
    for n in CANARY:
        assert (TAINT, "canary", "NoSchedule") in after[n]["taints"], n
    others = [n for n in after if n not in CANARY]
    assert len(others) == 18
    _assert_untouched(before, after, others)
    for n in others:
        assert clean.driver_pod_version(n) == before[n]["driver"], n
    rec = clean.record()
    assert rec["phase"] == "aborted" and rec["waves"][0]["status"] == "failed"
    assert "h100-0" in rec["waves"][0]["reason"]
    assert [w["status"] for w in rec["waves"][1:]] == ["pending"]
    # the failure says what is left and what to run, in sentences
    assert "Left on the cluster: the progress record (phase aborted);" in r.output
    assert "or undo it with step=rollback (gpu_canary_upgrade_action=rollback with the role" in r.output
    # h100-0 is fixed (with NVIDIA's controller its driver would not load on any version); a rollback in which
    # a100-0 (upgraded in the canary) does not come back fails naming it and what is left...
    clean.fault("h100-0", None)
    clean.fault("a100-0", "upgrade-failed")
    r = clean.playbook(gpu_canary_upgrade_action="rollback", gpu_canary_upgrade_stall_grace=20)
    assert r.returncode != 0
    assert "rollback did not complete: node a100-0: the operator's upgrade controller set" in r.output, r.output[-3000:]
    assert "Left on the cluster: the progress record (phase rollback-failed)" in r.output
    assert "Run step=rollback (gpu_canary_upgrade_action=rollback with the role; no target needed) again" in r.output
    # ... with the ClusterPolicy and NFD exactly as before the run all the same
    assert clean.prepared_objects() == objects
    # the second rollback, the node fixed, finishes: every node back on the old driver, nothing left
    clean.fault("a100-0", None)
    r = clean.playbook(gpu_canary_upgrade_action="rollback")
    assert r.returncode == 0, r.output[-4000:]
    assert clean.cp_driver() == before["h100-0"]["driver"]
    _assert_upgraded(clean, clean.gpu_node_names(), before["h100-0"]["driver"])
    assert clean.record()["phase"] == "rolled-back"
    assert clean.prepared_objects() == objects
    assert "Nothing of a canary upgrade is left on the cluster." in r.output


def test_a_fault_in_the_second_wave_aborts_after_the_canary_is_proven(clean):
    before = clean.snapshot()
    target = "610.40.01"
    # the second wave (25% of the 18 other nodes, alternating pools): a100-1, h100-1, a100-2, h100-2, a100-3
    clean.fault("h100-2", "validator-failing")
    r = clean.playbook(
        gpu_canary_upgrade_driver_version=target,
        gpu_canary_upgrade_waves=["25%", "100%"],
        gpu_canary_upgrade_wave_timeout=20,
    )
    assert r.returncode != 0
    assert "Canary upgrade aborted in wave-1" in r.output, r.output[-3000:]
    _assert_upgraded(clean, CANARY, target)
    after = clean.snapshot()
    wave1 = ["a100-1", "h100-1", "a100-2", "h100-2", "a100-3"]
    assert "h100-2" in after["h100-2"]["annotations"][FAILED] or "wave-1" in after["h100-2"]["annotations"][FAILED]
    for n in wave1:
        assert (TAINT, "wave-1", "NoSchedule") in after[n]["taints"], n
    rest = [n for n in after if n not in CANARY + wave1]
    assert len(rest) == 13
    _assert_untouched(before, after, rest)
    rec = clean.record()
    assert [w["status"] for w in rec["waves"]] == ["proven", "failed", "pending"]


def test_an_interrupted_run_resumes_where_it_stopped(clean):
    target = "610.50.01"
    extra = {"gpu_canary_upgrade_driver_version": target, "gpu_canary_upgrade_waves": ["50%", "100%"]}
    proc = clean.start_playbook(**extra)
    try:
        wait_for(lambda: (clean.record() or {}).get("phase") == "in-progress", 120, what="the upgrade under way")
        running = clean.status()  # while the upgrade runs, without knowing its target
        wait_for(
            lambda: (clean.record() or {}).get("waves", [{}])[0].get("status") == "proven",
            180,
            what="the canary proven",
        )
    finally:
        clean.kill(proc)
    assert "Canary upgrade to driver %s (from driver" % target in running and "phase in-progress" in running
    assert "wave-2 [pending]: 9 node(s), 9 held by the skip label" in running
    stopped = clean.record()
    assert stopped["phase"] == "in-progress"
    assert stopped["waves"][0]["status"] == "proven"
    assert [w["status"] for w in stopped["waves"][1:]] != ["proven", "proven"]
    # what the interruption left is named, with the command that goes on from there
    out = clean.status()
    assert "Left on the cluster: the progress record (phase in-progress);" in out
    assert "Fix the cause and run the same upgrade again to resume it, or undo it with step=rollback" in out
    r = clean.playbook(**extra)
    assert r.returncode == 0, r.output[-4000:]
    assert "resuming, phase in-progress" in r.output
    # the proven canary is not upgraded or proven again
    assert "Upgrade and check on the cluster side, with progress lines: canary" not in r.output
    assert "Upgrade and check on the cluster side, with progress lines: wave-2" in r.output
    rec = clean.record()
    assert rec["phase"] == "done" and rec["started"] == stopped["started"]
    assert rec["waves"][0]["finished"] == stopped["waves"][0]["finished"]
    _assert_upgraded(clean, clean.gpu_node_names(), target)


def test_a_driver_upgrade_on_nodes_with_a_preinstalled_driver_is_refused_before_any_write(clean):
    preinstalled = ["a100-6", "a100-7"]
    for n in preinstalled:
        clean.core.patch_node(n, {"metadata": {"labels": {DEPLOY_DRIVER: "pre-installed"}}})
    try:
        mark = clean.t.audit_mark()
        r = clean.playbook(gpu_canary_upgrade_driver_version="610.72.01")
        assert r.returncode != 0
        assert (
            "the driver change to 610.72.01 is refused before any write: the GPU Operator does not manage the driver "
            "of pool a100 (a100-6, a100-7): its nodes carry nvidia.com/gpu.deploy.driver=pre-installed (a "
            "preinstalled driver). Upgrade the host driver with your own tooling, or switch the pool to "
            "operator-managed drivers (label its nodes nvidia.com/gpu.deploy.driver=true), or exclude its nodes"
        ) in r.output, r.output[-3000:]
        assert "Canary upgrade gate failed, nothing was changed" in r.output
        assert clean.t.audit_writes(mark) == []
        assert clean.record() is None
        # the fix the message names: leave those nodes out, and the plan passes its gate
        r = clean.playbook(
            check=True, gpu_canary_upgrade_driver_version="610.72.01", gpu_canary_upgrade_exclude=preinstalled
        )
        assert r.returncode == 0 and "Excluded: a100-6, a100-7" in r.output, r.output[-3000:]
    finally:
        for n in preinstalled:
            clean.core.patch_node(n, {"metadata": {"labels": {DEPLOY_DRIVER: "true"}}})


def test_a_stuck_wave_prints_progress_and_stops_early_and_a_rollback_leaves_the_policy_and_nfd_as_before(clean):
    objects = clean.prepared_objects()
    source = clean.cp_driver()
    with clean.operator_stopped():  # no upgrade state will ever move
        started = time.monotonic()
        r = clean.playbook(
            gpu_canary_upgrade_driver_version="610.73.01",
            gpu_canary_upgrade_waves=["100%"],
            gpu_canary_upgrade_wave_timeout=600,
            gpu_canary_upgrade_stall_grace=10,
            gpu_canary_upgrade_progress_interval=2,
        )
        took = time.monotonic() - started
    assert r.returncode != 0
    assert took < 300  # the grace period decided it, not the 600 s wave timeout
    # a progress line per poll, each with the counts and what every node waits for
    polls = re.findall(
        r"\(item=canary: 0 of 2 nodes done, 0 in progress, 2 not started, 0 failed \((\d+) s of at most 600 s\)",
        r.output,
    )
    assert len(polls) >= 2 and [int(p) for p in polls] == sorted(int(p) for p in polls), r.output[-4000:]
    assert "; a100-0: upgrade-done, driver %s, waiting for the upgrade controller to start it" % source in r.output
    why = "nothing moved for 10 s, so nothing can progress (upgrade-done, driver %s, waiting for the upgrade " % source
    assert "Canary upgrade aborted in canary: canary failed: node a100-0: " + why in r.output
    # the status of the failed upgrade: its plan, the failure, each node, what is left and what to run
    out = clean.status()
    # where it started: the driver every GPU node ran (the reset put all 20 on the ClusterPolicy's)
    assert "Canary upgrade to driver 610.73.01 (from driver %s on 20 node(s); chart v26.3.3)" % source in out
    assert "phase aborted" in out and "Last failure: canary failed: node a100-0: " + why in out
    # (the operator, running again, marks the held nodes upgrade-required for the target it now sees)
    assert re.search(
        r"  a100-0: upgrade-(done|required), driver %s, held by the skip label, tainted, failed: " % source, out
    )
    assert "wave-1 [pending]: 18 node(s), 18 held by the skip label" in out
    assert "the canary toleration gpuops.io/canary-upgrade:NoSchedule on the operands of ClusterPolicy" in out
    # a later install stops at the unfinished canary upgrade, before any write
    mark = clean.t.audit_mark()
    r = clean.install_role()
    assert r.returncode != 0, r.output[-3000:]
    assert (
        "A canary upgrade is unfinished (record gpu-operator/gpuops-canary-upgrade, phase aborted); installing now "
        "would undo part of its preparation, so nothing was changed. Left on the cluster: the progress record"
    ) in r.output, r.output[-3000:]
    assert clean.t.audit_writes(mark) == []
    # the rollback (no target needed) cleans up: the ClusterPolicy and NFD exactly as before the run
    r = clean.playbook(gpu_canary_upgrade_action="rollback")
    assert r.returncode == 0, r.output[-4000:]
    assert clean.prepared_objects() == objects
    assert clean.record()["phase"] == "rolled-back"
    after = clean.snapshot()
    for n, snap in after.items():
        assert SKIP not in snap["labels"] and not [t for t in snap["taints"] if t[0] == TAINT], n
        assert FAILED not in snap["annotations"], n


def _driver_pods(cb):
    """Per GPU node, the NVIDIADriver label of its (not deleting) driver pod and whether it is ready."""
    out = {}
    for p in cb.core.list_namespaced_pod(NS, label_selector="app.kubernetes.io/component=nvidia-driver").items:
        if p.metadata.deletion_timestamp or not p.spec.node_name:
            continue
        ready = any(c.ready for c in p.status.container_statuses or [])
        out.setdefault(p.spec.node_name, []).append(((p.metadata.labels or {}).get("nvidia.com/nvidiadriver"), ready))
    return out


def test_nvidiadriver_mode_with_one_nvidiadriver_per_pool(clean):
    """useNvidiaDriverCRD with an NVIDIADriver per pool (nodeSelector gpuops.io/pool): the canary spans both pools,
    so both resources get the target version at once and the skip labels hold every node outside the wave."""
    snap = clean.snapshot()
    pools = sorted({s["labels"].get("gpuops.io/pool") for s in snap.values()})
    assert pools == ["a100", "h100"], pools
    source = clean.cp_driver()
    drv = clean.cp()["spec"]["driver"]
    extra = {k: drv[k] for k in ("repository", "image") if drv.get(k)}
    names = {pool: "driver-" + pool for pool in pools}
    for pool, name in names.items():
        clean.custom.create_cluster_custom_object(
            "nvidia.com",
            "v1alpha1",
            "nvidiadrivers",
            {
                "apiVersion": "nvidia.com/v1alpha1",
                "kind": "NVIDIADriver",
                "metadata": {"name": name, "labels": {"gpuops.io/canary-test": "true"}},
                "spec": {"driverType": "gpu", "version": source, "nodeSelector": {"gpuops.io/pool": pool}, **extra},
            },
        )
    patch = clean.custom.patch_cluster_custom_object
    try:
        patch(
            "nvidia.com", "v1", "clusterpolicies", "cluster-policy", {"spec": {"driver": {"useNvidiaDriverCRD": True}}}
        )

        def settled(version):
            pods, now = _driver_pods(clean), clean.snapshot()
            return all(
                pods.get(n) == [(names[now[n]["labels"]["gpuops.io/pool"]], True)]
                and now[n]["driver"] == version
                and now[n]["labels"].get(STATE) == "upgrade-done"
                for n in now
            )

        wait_for(lambda: settled(source), 120, what="every driver pod owned by its pool's NVIDIADriver")
        target = "610.95.01"
        r = clean.playbook(gpu_canary_upgrade_driver_version=target, gpu_canary_upgrade_waves=[1, "100%"])
        assert r.returncode == 0, r.output[-4000:]
        assert "; nvidiadriver mode, new," in r.output
        for name in names.values():
            assert "NVIDIADriver %s: set spec.version=%s" % (name, target) in r.output
            nvd = clean.custom.get_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers", name)
            assert nvd["spec"]["version"] == target, name
        assert clean.cp_driver() == source  # CRD mode: the ClusterPolicy's version is not the one that moves
        _assert_upgraded(clean, clean.gpu_node_names(), target)
        assert settled(target)
        rec = clean.record()
        assert rec["phase"] == "done" and [w["status"] for w in rec["waves"]] == ["proven"] * 3
        assert rec["waves"][0]["nodes"] == CANARY
        for prev, nxt in zip(rec["waves"], rec["waves"][1:]):
            assert prev["finished"] <= nxt["started"], (prev, nxt)
    finally:
        patch(
            "nvidia.com", "v1", "clusterpolicies", "cluster-policy", {"spec": {"driver": {"useNvidiaDriverCRD": None}}}
        )
        for name in names.values():
            clean.custom.delete_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers", name)
        wait_for(lambda: all(v == [(None, True)] for v in _driver_pods(clean).values()), 120, what="ClusterPolicy mode")


def test_a_chart_upgrade_that_adds_a_crd_field_moves_no_other_node_until_its_wave(clean):
    def nvd_spec_fields():
        crd = clean.ext.read_custom_resource_definition("nvidiadrivers.nvidia.com")
        return set(crd.spec.versions[0].schema.open_apiv3_schema.properties["spec"].properties)

    assert "default" not in nvd_spec_fields()  # the v26.3.3 CRD
    before = clean.snapshot()
    images = clean.operand_images()
    strategy = clean.cp()["spec"]["daemonsets"].get("updateStrategy")
    target = "610.60.01"
    extra = dict(
        gpu_canary_upgrade_chart_version="v26.7.0",
        gpu_canary_upgrade_chart_repo_url=clean.t.chart_repo_url,
        gpu_canary_upgrade_helm_binary=clean.t.helm,
        gpu_canary_upgrade_chart_ready_timeout=240,
        gpu_canary_upgrade_driver_version=target,
        gpu_canary_upgrade_waves=["100%"],
    )
    # first run: the canary fails after the chart is upgraded
    clean.fault("a100-0", "upgrade-failed")
    r = clean.playbook(**extra)
    assert r.returncode != 0 and "Canary upgrade aborted in canary" in r.output, r.output[-3000:]
    assert {"default", "upgradePolicy"} <= nvd_spec_fields()  # CRDs applied before the chart
    cp = clean.cp()
    assert cp["metadata"]["labels"]["helm.sh/chart"].endswith("v26.7.0")
    assert cp["spec"]["daemonsets"]["updateStrategy"] == "OnDelete"
    assert _tolerates(cp["spec"]["daemonsets"]["tolerations"], TAINT)  # kept through helm's value reset
    time.sleep(3)
    after = clean.snapshot()
    others = [n for n in after if n not in CANARY]
    _assert_untouched(before, after, others)
    now = clean.operand_images()
    for n in others:
        assert now[n] == images[n], n  # the new chart's operand images wait for the node's wave
    # second run, the fault fixed: resumes and finishes
    clean.fault("a100-0", None)
    r = clean.playbook(**extra)
    assert r.returncode == 0, r.output[-4000:]
    assert "resuming, phase aborted" in r.output
    _assert_upgraded(clean, clean.gpu_node_names(), target)
    final = clean.operand_images()
    assert all(final[n] == final["h100-0"] != images["h100-0"] for n in final)  # every node renewed in its wave
    assert clean.cp()["spec"]["daemonsets"].get("updateStrategy") == strategy  # restored after the last wave
