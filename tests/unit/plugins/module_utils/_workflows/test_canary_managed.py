"""Specs for what the canary gate knows the operator manages, for the progress reports of a wait and for the status
report (pure logic, no API)."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.gate import Cluster, gate
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.managed import (
    operand_changes,
    refusals,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DRIVER_VERSION_LABEL,
    FAILED_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.progress import (
    DONE,
    MOVING,
    NOT_STARTED,
    stalled,
    upgrade_report,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.status import Observed, describe

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
TAINT = "gpuops.io/canary-upgrade"


def node(name, pool=None, labels=None, taints=None, annotations=None):
    lab = {"feature.node.kubernetes.io/pci-10de.present": "true", "gpuops.io/pool": pool or name.split("-")[0]}
    lab.update(labels or {})
    return {
        "metadata": {"name": name, "labels": lab, "annotations": dict(annotations or {})},
        "spec": {"taints": taints or []},
    }


def policy(**spec):
    return {"metadata": {"name": "cluster-policy"}, "spec": spec}


NODES = [node("h100-0"), node("h100-1"), node("a100-0"), node("a100-1")]


# ---------------------------------------------------------------------------------------------- managed


def test_a_driver_change_is_refused_on_every_pool_when_the_cluster_policy_disables_the_driver():
    failures, unmanaged = refusals(NODES, policy(driver={"enabled": False, "version": "580.1"}), "610.1")
    assert len(failures) == 2  # one sentence per pool
    assert failures[0] == (
        "the driver change to 610.1 is refused before any write: the GPU Operator does not manage the driver of pool "
        "a100 (a100-0, a100-1): ClusterPolicy cluster-policy has driver.enabled=false (drivers preinstalled on the "
        "hosts). Upgrade the host driver with your own tooling, or switch the pool to operator-managed drivers (set "
        "driver.enabled=true in the chart values), or exclude its nodes"
    )
    assert "pool h100 (h100-0, h100-1)" in failures[1]
    assert sorted(unmanaged["driver"]) == ["a100-0", "a100-1", "h100-0", "h100-1"]


def test_a_pool_whose_nodes_carry_a_preinstalled_driver_label_is_refused_alone():
    nodes = [node("h100-0"), node("a100-0", labels={"nvidia.com/gpu.deploy.driver": "pre-installed"})]
    failures, unmanaged = refusals(nodes, policy(driver={"version": "580.1"}), "610.1")
    assert failures == [
        "the driver change to 610.1 is refused before any write: the GPU Operator does not manage the driver of pool "
        "a100 (a100-0): its nodes carry nvidia.com/gpu.deploy.driver=pre-installed (a preinstalled driver). Upgrade "
        "the host driver with your own tooling, or switch the pool to operator-managed drivers (label its nodes "
        "nvidia.com/gpu.deploy.driver=true), or exclude its nodes"
    ]
    assert unmanaged == {
        "driver": {"a100-0": "its nodes carry nvidia.com/gpu.deploy.driver=pre-installed (a preinstalled driver)"}
    }


def test_in_nvidiadriver_mode_a_node_no_nvidiadriver_selects_is_not_managed():
    cp = policy(driver={"useNvidiaDriverCRD": True})
    drivers = [{"metadata": {"name": "h100"}, "spec": {"nodeSelector": {"gpuops.io/pool": "h100"}}}]
    failures, unmanaged = refusals(NODES, cp, "610.1", nvidia_drivers=drivers)
    assert sorted(unmanaged["driver"]) == ["a100-0", "a100-1"]
    assert "no NVIDIADriver selects its nodes" in failures[0] and "create an NVIDIADriver" in failures[0]


def test_a_chart_only_upgrade_is_allowed_where_the_driver_is_preinstalled():
    assert refusals(NODES, policy(driver={"enabled": False}), None) == ([], {})


def test_a_toolkit_device_plugin_or_mig_change_is_refused_where_that_operand_is_disabled():
    cp = policy(toolkit={"enabled": False, "version": "v1.17.0"}, devicePlugin={"version": "v0.17.0"})
    values = {"toolkit": {"version": "v1.18.0"}, "devicePlugin": {"version": "v0.18.0"}, "mig": {"strategy": "mixed"}}
    assert operand_changes(values, cp) == {
        "toolkit": ["toolkit.version=v1.18.0"],
        "device plugin": ["devicePlugin.version=v0.18.0"],
        "MIG manager": ["mig.strategy=mixed"],
    }
    nodes = [node("h100-0"), node("a100-0", labels={"nvidia.com/gpu.deploy.mig-manager": "false"})]
    failures, unmanaged = refusals(nodes, cp, None, values)
    assert unmanaged == {
        "toolkit": {
            "h100-0": "ClusterPolicy cluster-policy has toolkit.enabled=false",
            "a100-0": "ClusterPolicy cluster-policy has toolkit.enabled=false",
        },
        "MIG manager": {"a100-0": "its nodes carry nvidia.com/gpu.deploy.mig-manager=false"},
    }
    assert failures[0].startswith(
        "the toolkit change (toolkit.version=v1.18.0) is refused before any write: the toolkit does not run on pool "
        "a100 (a100-0): ClusterPolicy cluster-policy has toolkit.enabled=false. Change it on the hosts with your own "
        "tooling, or enable the operand (set toolkit.enabled=true in the chart values)"
    )
    # values that enable the toolkit make the change one the operator makes
    assert "toolkit" not in refusals(nodes, cp, None, {"toolkit": {"enabled": True, "version": "v1.18.0"}})[1]


def test_the_gate_refuses_what_the_operator_does_not_manage_on_planned_nodes_only():
    nodes = [node("h100-0"), node("a100-0", labels={"nvidia.com/gpu.deploy.driver": "false"})]
    g = gate(Cluster(nodes, [], [], cp=policy(driver={})), ["h100-0"], None, CanaryOptions(driver_version="610.1"))
    assert g["passed"] and g["unmanaged"] == {}
    g = gate(
        Cluster(nodes, [], [], cp=policy(driver={})), ["h100-0", "a100-0"], None, CanaryOptions(driver_version="610.1")
    )
    assert not g["passed"] and list(g["unmanaged"]["driver"]) == ["a100-0"]


# ---------------------------------------------------------------------------------------------- progress


def test_a_wave_report_counts_the_nodes_and_says_what_each_one_that_is_not_done_waits_for():
    statuses = {
        "h100-0": (DONE, "upgrade-done 610.1", "upgrade-done, driver 610.1"),
        "a100-0": (
            MOVING,
            "m",
            "pod-restart-required, driver 580.1, waiting for the new driver pod to run and be ready",
        ),
    }
    out = upgrade_report("canary", statuses, 42.7, 1800)
    assert out["lines"] == [
        "canary: 1 of 2 nodes done, 1 in progress, 0 not started, 0 failed (42 s of at most 1800 s)",
        "a100-0: pod-restart-required, driver 580.1, waiting for the new driver pod to run and be ready",
    ]
    assert out["waiting"] and out["done"] == ["h100-0"] and out["in_progress"] == ["a100-0"]


def test_a_report_shows_at_most_ten_nodes_and_counts_the_rest():
    statuses = {"n-%02d" % i: (NOT_STARTED, "m", "no upgrade state") for i in range(13)}
    lines = upgrade_report("wave-1", statuses, 0, 60)["lines"]
    assert len(lines) == 12 and lines[-1] == "... and 3 more"


def test_nothing_can_progress_when_no_node_moves_or_is_in_progress_for_the_grace_period():
    waiting = {"a": (NOT_STARTED, "m", ""), "b": (DONE, "m", "")}
    assert stalled(waiting, 60, 60)
    assert not stalled(waiting, 59, 60)
    assert not stalled(dict(waiting, c=(MOVING, "m", "")), 600, 60)  # the controller works on c
    assert not stalled({"b": (DONE, "m", "")}, 600, 60)  # nothing left to move


# ---------------------------------------------------------------------------------------------- status


def record(phase="aborted", **extra):
    rec = {
        "version": 1,
        "phase": phase,
        "target": {"driver_version": "610.1", "chart_version": None},
        "from": {"driver_version": "580.1", "chart_version": "v26.7.0"},
        "taint": {"key": TAINT, "effect": "NoSchedule"},
        "waves": [
            {"index": 0, "name": "canary", "nodes": ["h100-0"], "status": "failed", "reason": "canary failed: x"},
            {"index": 1, "name": "wave-1", "nodes": ["h100-1", "a100-0"], "status": "pending", "reason": None},
        ],
        "skip_labelled": ["h100-1", "a100-0"],
        "operand_strategy": "RollingUpdate",
        "prepared": {"tolerations": {"cluster_policy": None}, "upgrade_policy": {"maxParallelUpgrades": 1}},
        "started": "2026-12-03T10:00:00Z",
        "updated": "2026-12-03T10:05:00Z",
        "reason": "canary failed: node h100-0: the operator's upgrade controller set it upgrade-failed",
    }
    rec.update(extra)
    return rec


TOLERATION = {"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}
PREPARED_CP = policy(
    driver={"version": "610.1", "upgradePolicy": {"maxParallelUpgrades": 0}},
    daemonsets={"tolerations": [TOLERATION], "updateStrategy": "OnDelete"},
)


def cluster_nodes():
    failed = {FAILED_ANNOTATION: "2026-12-03T10:04:00Z canary: upgrade-failed"}
    return [
        node(
            "h100-0",
            labels={STATE: "upgrade-failed", DRIVER_VERSION_LABEL: "580.1"},
            taints=[{"key": TAINT, "value": "canary", "effect": "NoSchedule"}],
            annotations=failed,
        ),
        node("h100-1", labels={STATE: "upgrade-required", SKIP: "true", DRIVER_VERSION_LABEL: "580.1"}),
        node("a100-0", labels={STATE: "upgrade-required", SKIP: "true", DRIVER_VERSION_LABEL: "580.1"}),
    ]


def test_the_status_of_an_aborted_upgrade_shows_the_plan_each_node_the_failure_and_what_is_left():
    st = describe(
        record(),
        Observed(PREPARED_CP, [], cluster_nodes()),
        "gpu-operator/gpuops-canary-upgrade",
        (TAINT, "NoSchedule"),
    )
    assert st["phase"] == "aborted" and st["unfinished"]
    assert st["nodes"]["h100-0"] == {
        "upgrade_state": "upgrade-failed",
        "driver_version": "580.1",
        "skip": False,
        "tainted": True,
        "cordoned": False,
        "failure": "2026-12-03T10:04:00Z canary: upgrade-failed",
    }
    assert st["leftovers"] == [
        "the progress record (phase aborted)",
        "the canary toleration gpuops.io/canary-upgrade:NoSchedule on the operands of ClusterPolicy cluster-policy",
        "updateStrategy OnDelete on the operands of ClusterPolicy cluster-policy (it was RollingUpdate)",
        "driver.upgradePolicy.maxParallelUpgrades=0 in ClusterPolicy cluster-policy (it was 1)",
        "driver version 610.1 in ClusterPolicy cluster-policy (it was 580.1)",
        "the canary taint gpuops.io/canary-upgrade on 1 node(s): h100-0",
        "the failure annotation gpuops.io/canary-upgrade-failed on 1 node(s): h100-0",
        "the skip label nvidia.com/gpu-driver-upgrade.skip=true on 2 node(s): a100-0, h100-1",
    ]
    assert st["lines"][:5] == [
        "Canary upgrade to driver 610.1 (from driver 580.1 and chart v26.7.0), record "
        "gpu-operator/gpuops-canary-upgrade: phase aborted (started 2026-12-03T10:00:00Z, updated "
        "2026-12-03T10:05:00Z).",
        "Last failure: canary failed: node h100-0: the operator's upgrade controller set it upgrade-failed",
        "canary [failed]: 1 node(s); canary failed: x",
        "  h100-0: upgrade-failed, driver 580.1, tainted, failed: 2026-12-03T10:04:00Z canary: upgrade-failed",
        "wave-1 [pending]: 2 node(s), 2 held by the skip label",
    ]
    assert (
        st["lines"][-1]
        == st["next"]
        == (
            "Fix the cause and run the same upgrade again to resume it, or undo it with step=rollback "
            "(gpu_canary_upgrade_action=rollback with the role; no target needed)."
        )
    )


def test_after_a_rollback_each_wave_reads_rolled_back_and_a_driver_known_only_by_its_older_labels_is_named():
    proven = record("rolled-back")
    proven["waves"][0].update(status="proven", reason=None)
    nodes = cluster_nodes()
    nodes[0]["metadata"]["labels"] = {  # GFD's deprecated label names only
        "nvidia.com/cuda.driver.major": "580",
        "nvidia.com/cuda.driver.minor": "1",
    }
    st = describe(proven, Observed(policy(), [], nodes), "gpu-operator/gpuops-canary-upgrade", (TAINT, "NoSchedule"))
    assert st["lines"][2:4] == [
        "canary [rolled back, was proven]: 1 node(s)",
        "  h100-0: no upgrade state, driver 580.1, tainted, failed: 2026-12-03T10:04:00Z canary: upgrade-failed",
    ]
    assert st["lines"][4] == "wave-1 [pending]: 2 node(s), 2 held by the skip label"


def test_without_a_record_the_status_says_so_and_still_names_canary_leftovers():
    st = describe(
        None, Observed(policy(), [], [node("h100-0")]), "gpu-operator/gpuops-canary-upgrade", (TAINT, "NoSchedule")
    )
    assert st["phase"] is None and not st["unfinished"] and st["leftovers"] == []
    assert st["lines"] == [
        "No canary upgrade is recorded in ConfigMap gpu-operator/gpuops-canary-upgrade.",
        "Nothing of a canary upgrade is left on the cluster.",
        "Nothing is left to clean up.",
    ]
    tainted = node("h100-0", taints=[{"key": TAINT, "value": "canary", "effect": "NoSchedule"}])
    st = describe(None, Observed(PREPARED_CP, [], [tainted]), "ns/cm", (TAINT, "NoSchedule"))
    assert st["leftovers"] == [
        "the canary toleration gpuops.io/canary-upgrade:NoSchedule on the operands of ClusterPolicy cluster-policy",
        "the canary taint gpuops.io/canary-upgrade on 1 node(s): h100-0",
    ]
    assert st["next"].startswith("No canary upgrade is under way: remove what is left by hand")


def test_a_finished_upgrade_leaves_nothing_behind_and_names_the_tolerations_it_keeps():
    cp = policy(
        driver={"version": "610.1", "upgradePolicy": {"maxParallelUpgrades": 1}},
        daemonsets={"updateStrategy": "RollingUpdate", "tolerations": [TOLERATION]},
    )
    nodes = [node("h100-0", labels={STATE: "upgrade-done", DRIVER_VERSION_LABEL: "610.1"})]
    st = describe(record("done", skip_labelled=["h100-9"]), Observed(cp, [], nodes), "ns/cm", (TAINT, "NoSchedule"))
    assert not st["unfinished"] and st["leftovers"] == [] and st["next"] == "Nothing is left to clean up."
    assert st["kept"] == [
        "the canary toleration gpuops.io/canary-upgrade:NoSchedule on the operands of ClusterPolicy cluster-policy"
    ]
    assert st["lines"][-2].startswith("Kept after the upgrade: the canary toleration gpuops.io/canary-upgrade")


def test_the_status_reads_the_cluster_policy_by_release_while_nodes_upgrade():
    moving = node("h100-1", labels={STATE: "drain-required", DRIVER_VERSION_LABEL: "580.1"})
    cp = policy(driver={"version": "610.1"})
    cp["metadata"]["labels"] = {"helm.sh/chart": "gpu-operator-v26.3.3"}
    cp["status"] = {"state": "ready"}
    st = describe(record(), Observed(cp, [], [moving]), "ns/cm", (TAINT, "NoSchedule"))
    assert (st["policy_status"]["meaning"], st["policy_status"]["upgrading"]) == ("not-proven", ["h100-1"])
    assert st["lines"][-2].startswith("Operator: ClusterPolicy cluster-policy says ready, but on operator 26.3.3")
    st = describe(record(), Observed(cp, [], [node("h100-1")]), "ns/cm", (TAINT, "NoSchedule"))
    assert st["policy_status"]["meaning"] == "ready" and not any(x.startswith("Operator:") for x in st["lines"])
