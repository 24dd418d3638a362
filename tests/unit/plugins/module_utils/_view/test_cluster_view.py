"""Specification of plugins/module_utils/_view/cluster_view.py: the per-node GPU view from raw API objects."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view import cluster_view as cv
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view import operand_pods as op

# ------------------------------------------------------------------------------------------------
# Builders for raw API objects


def node(name, labels=None, capacity=None, allocatable=None, taints=None, unschedulable=False, ready="True"):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "capacity": dict({"cpu": "8"}, **(capacity or {})),
            "allocatable": dict({"cpu": "8"}, **(allocatable if allocatable is not None else capacity or {})),
            "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady", "message": "ok"}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "kernelVersion": "5.15.0-105-generic", "osImage": "Ubuntu"},
        },
    }


def gpu_node(name, **kw):
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/cuda.driver-version.full": "550.127.08",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "gpuops.io/rack": "r1",
    }
    labels.update(kw.pop("labels", {}))
    return node(name, labels=labels, capacity=kw.pop("capacity", {"nvidia.com/gpu": "8"}), **kw)


def pod(name, node_name, app, ready=True, phase="Running", restarts=0, last_reason=None, waiting=None, **meta):
    container = {"name": "main", "restartCount": restarts, "state": {"running": {}}}
    if last_reason:
        container["lastState"] = {"terminated": {"reason": last_reason, "finishedAt": "2026-01-01T00:00:00Z"}}
    if waiting:
        container["state"] = {"waiting": {"reason": waiting}}
    return {
        "metadata": dict({"name": name, "labels": {"app": app}}, **meta),
        "spec": {"nodeName": node_name},
        "status": {
            "phase": phase,
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [container],
        },
    }


# ------------------------------------------------------------------------------------------------
# Which nodes are GPU nodes


class TestGpuNodeDetection:
    def test_operator_label_makes_a_gpu_node(self):
        assert cv.is_gpu_node(node("a", labels={"nvidia.com/gpu.present": "true"}))

    def test_nfd_pci_label_alone_makes_a_gpu_node(self):
        assert cv.is_gpu_node(node("a", labels={"feature.node.kubernetes.io/pci-10de.present": "true"}))

    def test_gpu_capacity_alone_makes_a_gpu_node(self):
        assert cv.is_gpu_node(node("a", capacity={"nvidia.com/gpu": "1"}))

    def test_a_node_whose_gpu_fell_off_still_counts_when_nfd_sees_the_device(self):
        labels = {"nvidia.com/gpu.present": "false", "feature.node.kubernetes.io/pci-10de.present": "true"}
        assert cv.is_gpu_node(node("a", labels=labels))

    def test_cpu_node_is_not_a_gpu_node(self):
        assert not cv.is_gpu_node(node("cpu-0", labels={"kubernetes.io/os": "linux"}))

    def test_without_selector_cpu_nodes_are_dropped_with_a_selector_they_are_kept(self):
        nodes = [gpu_node("g0"), node("cpu-0")]
        assert list(cv.cluster_view({"nodes": nodes, "pods": []})["nodes"]) == ["g0"]
        assert list(cv.cluster_view({"nodes": nodes, "pods": []}, cv.ViewOptions(gpu_nodes_only=False))["nodes"]) == [
            "cpu-0",
            "g0",
        ]


# ------------------------------------------------------------------------------------------------
# Per-node view


class TestNodeView:
    def test_gpu_labels_are_typed(self):
        gpu = cv.node_view(gpu_node("g0"))["gpu"]
        assert gpu["present"] is True
        assert gpu["product"] == "NVIDIA-H100-80GB-HBM3"
        assert (gpu["count"], gpu["memory_mib"]) == (8, 81559)
        assert (gpu["driver_version"], gpu["cuda_runtime_version"]) == ("550.127.08", "12.4")

    def test_versions_fall_back_to_component_and_deprecated_labels(self):
        labels = {
            "nvidia.com/cuda.driver.major": "535",
            "nvidia.com/cuda.driver.minor": "104",
            "nvidia.com/cuda.driver.rev": "05",
            "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/cuda.runtime-version.minor": "2",
        }
        gpu = cv.gpu_labels(labels)
        assert (gpu["driver_version"], gpu["cuda_runtime_version"]) == ("535.104.05", "12.2")

    def test_missing_labels_are_null_not_errors(self):
        view = cv.node_view(node("bare", labels={"feature.node.kubernetes.io/pci-10de.present": "true"}))
        assert view["gpu"]["present"] is None and view["gpu"]["count"] is None
        assert view["upgrade_state"] is None and view["operands"] == {} and view["operands_missing"] == []

    def test_capacity_and_allocatable_keep_only_gpu_and_mig_resources_as_integers(self):
        view = cv.node_view(
            gpu_node(
                "g0",
                capacity={"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7", "memory": "2Ti"},
                allocatable={"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "7"},
            )
        )
        assert view["capacity"] == {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 7}
        assert view["allocatable"] == {"nvidia.com/gpu": 7, "nvidia.com/mig-1g.10gb": 7}

    def test_mig_labels(self):
        labels = {
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": "all-1g.10gb",
            "nvidia.com/mig.config.state": "success",
            "nvidia.com/mig-1g.10gb.count": "7",
            "nvidia.com/mig-1g.10gb.memory": "9728",
        }
        mig = cv.node_view(gpu_node("g0", labels=labels))["gpu"]["mig"]
        assert mig["capable"] is True and mig["strategy"] == "mixed"
        assert (mig["config"], mig["config_state"]) == ("all-1g.10gb", "success")
        assert mig["types"] == {"1g.10gb": {"count": 7, "memory": 9728}}

    def test_taints_cordon_and_readiness(self):
        taint = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
        view = cv.node_view(gpu_node("g0", taints=[taint], unschedulable=True, ready="False"))
        assert view["taints"] == [{"key": "nvidia.com/gpu", "value": None, "effect": "NoSchedule"}]
        assert view["unschedulable"] is True
        assert view["ready"] is False
        assert view["conditions"]["Ready"]["status"] == "False"

    def test_upgrade_state_skip_and_deploy_labels(self):
        labels = {
            "nvidia.com/gpu-driver-upgrade-state": "upgrade-failed",
            "nvidia.com/gpu-driver-upgrade.skip": "true",
            "nvidia.com/gpu.deploy.driver": "paused-for-driver-upgrade",
            "nvidia.com/gpu.deploy.device-plugin": "true",
        }
        view = cv.node_view(gpu_node("g0", labels=labels))
        assert view["upgrade_state"] == "upgrade-failed"
        assert view["upgrade_skip"] is True
        assert view["deploy"] == {"driver": "paused-for-driver-upgrade", "device-plugin": "true"}

    def test_labels_keep_nvidia_and_pci_labels_only(self):
        view = cv.node_view(gpu_node("g0", labels={"feature.node.kubernetes.io/pci-10de.present": "true"}))
        assert "gpuops.io/rack" not in view["labels"]
        assert view["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"


# ------------------------------------------------------------------------------------------------
# Operand pods


class TestOperands:
    def test_pods_are_grouped_by_node_and_component(self):
        pods = [
            pod("nvidia-device-plugin-daemonset-a", "g0", "nvidia-device-plugin-daemonset"),
            pod("nvidia-driver-daemonset-a", "g0", "nvidia-driver-daemonset"),
            pod("nvidia-driver-daemonset-b", "g1", "nvidia-driver-daemonset"),
            pod("gpu-operator-abc", "cp-0", "gpu-operator"),
        ]
        by_node, unscheduled = cv.operands_by_node(pods)
        assert sorted(by_node["g0"]) == ["device-plugin", "driver"]
        assert list(by_node["g1"]) == ["driver"]
        assert "cp-0" not in by_node  # the operator pod is not an operand
        assert unscheduled == []

    def test_all_named_operand_daemonsets_map_to_components(self):
        names = {
            "nvidia-driver-daemonset": "driver",
            "nvidia-container-toolkit-daemonset": "container-toolkit",
            "nvidia-device-plugin-daemonset": "device-plugin",
            "gpu-feature-discovery": "gpu-feature-discovery",
            "nvidia-dcgm-exporter": "dcgm-exporter",
            "nvidia-operator-validator": "operator-validator",
            "nvidia-mig-manager": "mig-manager",
        }
        for app, component in names.items():
            assert op.pod_component(pod("p", "g0", app)) == component

    def test_nvidia_driver_cr_pods_are_driver_pods_whatever_their_name(self):
        p = pod("nvidia-gpu-driver-ubuntu22.04-7c9f-x", "g0", "nvidia-gpu-driver-ubuntu22.04-7c9f")
        p["metadata"]["labels"]["app.kubernetes.io/component"] = "nvidia-driver"
        assert op.pod_component(p) == "driver"

    def test_unknown_daemonset_pods_are_named_after_their_owner(self):
        p = pod("x", "g0", "something")
        p["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "nfd-worker"}]
        assert op.pod_component(p) == "nfd-worker"

    def test_summary_has_phase_readiness_restarts_and_last_termination_reason(self):
        p = pod(
            "dp",
            "g0",
            "nvidia-device-plugin-daemonset",
            ready=False,
            restarts=4,
            last_reason="OOMKilled",
            waiting="CrashLoopBackOff",
        )
        s = op.pod_summary(p)
        assert (s["phase"], s["ready"], s["restarts"]) == ("Running", False, 4)
        assert s["last_termination_reason"] == "OOMKilled" and s["last_termination_container"] == "main"
        assert s["waiting_reason"] == "CrashLoopBackOff"

    def test_restarts_include_init_containers(self):
        p = pod("v", "g0", "nvidia-operator-validator", restarts=1)
        p["status"]["initContainerStatuses"] = [
            {
                "name": "driver-validation",
                "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"reason": "Error", "finishedAt": "2026-01-02T00:00:00Z"}},
            }
        ]
        s = op.pod_summary(p)
        assert s["restarts"] == 6
        assert (s["last_termination_reason"], s["last_termination_container"]) == ("Error", "driver-validation")
        assert s["waiting_reason"] == "CrashLoopBackOff"

    def test_during_a_rollout_the_live_newest_pod_represents_the_component(self):
        old = pod("drv-old", "g0", "nvidia-driver-daemonset", deletionTimestamp="2026-01-03T00:00:00Z")
        new = pod("drv-new", "g0", "nvidia-driver-daemonset", ready=False)
        by_node, _unused = cv.operands_by_node([old, new])
        assert by_node["g0"]["driver"]["name"] == "drv-new"
        assert by_node["g0"]["driver"]["other_pods"] == ["drv-old"]

    def test_operands_ready_is_false_when_any_operand_is_not_ready(self):
        pods = [pod("d", "g0", "nvidia-driver-daemonset"), pod("p", "g0", "nvidia-device-plugin-daemonset", False)]
        view = cv.cluster_view({"nodes": [gpu_node("g0")], "pods": pods})["nodes"]["g0"]
        assert view["operands_ready"] is False

    def test_a_node_the_operator_has_not_labelled_yet_is_not_operands_ready(self):
        bare = node("g0", labels={"feature.node.kubernetes.io/pci-10de.present": "true"})
        assert cv.cluster_view({"nodes": [bare], "pods": []})["nodes"]["g0"]["operands_ready"] is False

    def test_a_required_operand_labelled_true_without_a_pod_is_missing_and_not_ready(self):
        labels = {
            "nvidia.com/gpu.deploy.driver": "false",
            "nvidia.com/gpu.deploy.container-toolkit": "true",
            "nvidia.com/gpu.deploy.device-plugin": "true",
        }
        pods = [pod("p", "g0", "nvidia-device-plugin-daemonset")]
        view = cv.cluster_view({"nodes": [gpu_node("g0", labels=labels)], "pods": pods})["nodes"]["g0"]
        assert view["operands_missing"] == ["container-toolkit"] and view["operands_ready"] is False

    def test_a_required_operand_the_cluster_policy_disables_is_not_expected(self):
        labels = {"nvidia.com/gpu.deploy.driver": "true", "nvidia.com/gpu.deploy.device-plugin": "true"}
        pods = [pod("p", "g0", "nvidia-device-plugin-daemonset")]
        policy = cr("cluster-policy", "ready", spec={"driver": {"enabled": False}})
        view = cv.cluster_view({"nodes": [gpu_node("g0", labels=labels)], "pods": pods, "cluster_policies": [policy]})[
            "nodes"
        ]["g0"]
        assert view["operands_missing"] == [] and view["operands_ready"] is True
        view = cv.cluster_view(
            {
                "nodes": [gpu_node("g0", labels=labels)],
                "pods": pods,
                "cluster_policies": [cr("cluster-policy", "ready")],
            }
        )["nodes"]["g0"]
        assert view["operands_missing"] == ["driver"]

    def test_a_node_with_its_operands_switched_off_is_ready_without_pods(self):
        view = cv.cluster_view(
            {"nodes": [gpu_node("g0", labels={"nvidia.com/gpu.deploy.operands": "false"})], "pods": []}
        )
        assert view["nodes"]["g0"]["operands_ready"] is True

    def test_succeeded_validation_pods_count_as_healthy(self):
        pods = [pod("cuda", "g0", "nvidia-cuda-validator", ready=False, phase="Succeeded")]
        assert cv.cluster_view({"nodes": [gpu_node("g0")], "pods": pods})["nodes"]["g0"]["operands_ready"] is True

    def test_operand_pods_without_a_node_are_reported_as_unscheduled(self):
        p = pod("nvidia-driver-daemonset-z", None, "nvidia-driver-daemonset", ready=False, phase="Pending")
        result = cv.cluster_view({"nodes": [gpu_node("g0")], "pods": [p]})
        assert [s["name"] for s in result["unscheduled_operands"]] == ["nvidia-driver-daemonset-z"]
        assert result["totals"]["operand_pods_unscheduled"] == 1


# ------------------------------------------------------------------------------------------------
# ClusterPolicy, NVIDIADriver, totals


def cr(name, state, spec=None, conditions=None):
    return {
        "metadata": {"name": name, "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec or {},
        "status": {"state": state, "conditions": conditions or []},
    }


class TestCustomResources:
    def test_cluster_policy_state_conditions_and_driver_spec(self):
        policy = cr(
            "cluster-policy",
            "notReady",
            spec={
                "driver": {
                    "enabled": True,
                    "version": "550.127.08",
                    "useNvidiaDriverCRD": False,
                    "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1},
                }
            },
            conditions=[{"type": "Ready", "status": "False", "reason": "OperandNotReady", "message": "gpu-feature"}],
        )
        view = cv.cluster_policy_view([policy])
        assert (view["name"], view["state"], view["ready"]) == ("cluster-policy", "notReady", False)
        assert view["conditions"][0]["reason"] == "OperandNotReady"
        assert view["driver"]["version"] == "550.127.08"
        assert view["driver"]["upgrade_policy"]["maxParallelUpgrades"] == 1

    def test_nri_plugin_mode_is_read_from_the_cdi_spec_and_off_unless_set_true(self):
        nri = cv.cluster_policy_view(
            [cr("cluster-policy", "ready", spec={"cdi": {"enabled": True, "nriPluginEnabled": True}})]
        )
        assert nri["cdi"] == {"enabled": True, "nri_plugin": True}
        plain = cv.cluster_policy_view([cr("cluster-policy", "ready")])
        assert plain["cdi"] == {"enabled": None, "nri_plugin": False}

    def test_an_ignored_duplicate_policy_does_not_hide_the_active_one(self):
        view = cv.cluster_policy_view([cr("a-dup", "ignored"), cr("cluster-policy", "ready")])
        assert view["name"] == "cluster-policy" and view["ready"] is True

    def test_no_policy_or_no_crd_gives_null_and_the_crd_flag_says_which(self):
        assert (
            cv.cluster_view({"nodes": [], "pods": [], "cluster_policies": [], "nvidia_drivers": None})["cluster_policy"]
            is None
        )
        crds = cv.cluster_view({"nodes": [], "pods": [], "cluster_policies": [], "nvidia_drivers": None})["crds"]
        assert crds == {"clusterpolicies.nvidia.com": True, "nvidiadrivers.nvidia.com": False}

    def test_nvidia_drivers_are_sorted_and_summarised(self):
        drivers = [
            cr("main", "ready", spec={"driverType": "gpu", "version": "550.127.08", "default": True}),
            cr("canary", "notReady", spec={"version": "570.86.15", "nodeSelector": {"gpuops.io/pool": "canary"}}),
        ]
        views = cv.cluster_view({"nodes": [], "pods": [], "cluster_policies": None, "nvidia_drivers": drivers})[
            "nvidia_drivers"
        ]
        assert [d["name"] for d in views] == ["canary", "main"]
        assert views[0]["node_selector"] == {"gpuops.io/pool": "canary"} and views[0]["ready"] is False
        assert views[1]["default"] is True and views[1]["driver_type"] == "gpu"


class TestTotals:
    def test_totals_add_up_over_nodes(self):
        nodes = [
            gpu_node("g0", labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"}),
            gpu_node(
                "g1",
                allocatable={"nvidia.com/gpu": "6"},
                unschedulable=True,
                labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"},
            ),
            gpu_node(
                "t4", labels={"nvidia.com/gpu.product": "Tesla-T4"}, capacity={"nvidia.com/gpu": "1"}, ready="False"
            ),
            node("cpu-0"),
        ]
        pods = [pod("d0", "g0", "nvidia-driver-daemonset"), pod("d1", "g1", "nvidia-driver-daemonset", False)]
        t = cv.cluster_view({"nodes": nodes, "pods": pods})["totals"]
        assert (t["nodes"], t["nodes_ready"], t["nodes_unschedulable"]) == (3, 2, 1)
        assert (t["gpu_capacity"], t["gpu_allocatable"]) == (17, 15)
        assert t["products"] == {"NVIDIA-H100-80GB-HBM3": 2, "Tesla-T4": 1}
        assert t["upgrade_states"] == {"upgrade-done": 1, "upgrade-failed": 1}
        assert (t["operand_pods"], t["operand_pods_not_ready"], t["nodes_operands_ready"]) == (2, 1, 2)

    def test_mig_resources_are_totalled_per_profile(self):
        nodes = [
            gpu_node("a", capacity={"nvidia.com/mig-1g.10gb": "7"}),
            gpu_node("b", capacity={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"}),
        ]
        t = cv.cluster_view({"nodes": nodes, "pods": []})["totals"]
        assert t["mig_capacity"] == {"nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 2}

    def test_a_thousand_nodes_with_seven_operands_each_are_all_viewed(self):
        nodes = [gpu_node("g%04d" % i) for i in range(1000)]
        apps = list(op.COMPONENTS)[:7]
        pods = [pod("%s-%d" % (a, i), "g%04d" % i, a) for i in range(1000) for a in apps]
        result = cv.cluster_view({"nodes": nodes, "pods": pods})
        assert result["totals"]["nodes"] == 1000 and result["totals"]["operand_pods"] == 7000


# ------------------------------------------------------------------------------------------------
# node_detail: the compact summary of every node, full detail where asked


def healthy_gpu_node(name, **kw):
    """A labelled GPU node with its one required operand running (see ``healthy_pods``)."""
    labels = dict({"nvidia.com/gpu.deploy.device-plugin": "true"}, **kw.pop("labels", {}))
    return gpu_node(name, labels=labels, **kw)


def healthy_pods(*names):
    return [pod("nvidia-device-plugin-daemonset-%s" % n, n, "nvidia-device-plugin-daemonset") for n in names]


class TestStuckOperands:
    """A node is stuck when one of its operands will not get ready by waiting: the wait on the operands stops."""

    APP = "nvidia-device-plugin-daemonset"
    EVENT = {
        "reason": "FailedCreatePodSandBox",
        "involvedObject": {"kind": "Pod", "name": "dp-g0"},
        "message": 'no runtime for "nvidia" is configured',
    }

    def view(self, events=None, **pod_state):
        return cv.cluster_view(
            {
                "nodes": [healthy_gpu_node("g0")],
                "pods": [pod("dp-g0", "g0", self.APP, ready=False, **pod_state)],
                "sandbox_events": events,
            }
        )

    @pytest.mark.parametrize(
        ("pod_state", "events", "stuck"),
        [
            ({"waiting": "ContainerCreating"}, None, False),  # pulling its image, perhaps
            ({"waiting": "ContainerCreating"}, [EVENT], True),
            ({"waiting": "ImagePullBackOff"}, None, True),
            ({"waiting": "CreateContainerConfigError"}, None, True),
            ({"waiting": "CrashLoopBackOff", "restarts": 2}, None, False),
            ({"waiting": "CrashLoopBackOff", "restarts": 3}, None, True),
            ({"phase": "Pending"}, None, False),
        ],
    )
    def test_which_operand_states_are_stuck(self, pod_state, events, stuck):
        view = self.view(events, **pod_state)
        assert view["nodes"]["g0"]["operands_stuck"] is stuck
        assert view["node_summary"]["g0"]["operands_stuck"] is stuck
        assert view["totals"]["nodes_operands_stuck"] == int(stuck)

    def test_the_sandbox_error_is_the_newest_event_of_the_pod(self):
        older = dict(self.EVENT, message="older", lastTimestamp="2026-01-01T00:00:00Z")
        newer = dict(self.EVENT, lastTimestamp="2026-01-01T00:01:00Z")
        view = self.view([newer, older], waiting="ContainerCreating")
        assert (
            view["nodes"]["g0"]["operands"]["device-plugin"]["sandbox_error"] == 'no runtime for "nvidia" is configured'
        )


class TestNodeDetail:
    def test_a_healthy_node_has_no_problem(self):
        view = cv.cluster_view({"nodes": [healthy_gpu_node("g0")], "pods": healthy_pods("g0")})
        assert view["node_summary"]["g0"] == {
            "mode": "extended-resource",
            "ready": True,
            "operands_stuck": False,
            "unschedulable": False,
            "operands_ready": True,
            "gpu_capacity": 8,
            "gpu_allocatable": 8,
            "dra_devices": 0,
            "problems": [],
        }

    def test_each_problem_has_its_code_in_a_fixed_order(self):
        nodes = [
            healthy_gpu_node("down", ready="False", unschedulable=True),
            healthy_gpu_node("no-plugin"),
            healthy_gpu_node("upgrade", labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"}),
        ]
        summary = cv.cluster_view({"nodes": nodes, "pods": healthy_pods("down", "upgrade")})["node_summary"]
        assert summary["down"]["problems"] == ["not-ready", "unschedulable", "foreign-quarantine"]
        assert summary["no-plugin"]["problems"] == ["operands-not-ready", "operands-missing"]
        assert summary["upgrade"]["problems"] == ["upgrade-failed"]

    def test_a_remediation_marker_quarantines_a_node_with_its_evidence_and_more_markers_are_options(self):
        node = healthy_gpu_node("g0")
        node["spec"]["taints"] = [{"key": "example.com/broken", "value": "xid", "effect": "NoSchedule"}]
        node["metadata"].setdefault("annotations", {})["quarantineHealthEvent"] = "{...}"
        view = cv.cluster_view({"nodes": [node], "pods": healthy_pods("g0")})
        assert [(e["kind"], e["owner"]) for e in view["nodes"]["g0"]["quarantine"]] == [("annotation", "NVSentinel")]
        assert view["node_summary"]["g0"]["problems"] == ["foreign-quarantine"]
        extra = [{"kind": "taint", "key": "example.com/broken", "owner": "ours"}]
        view = cv.cluster_view({"nodes": [node], "pods": healthy_pods("g0")}, cv.ViewOptions(quarantine_markers=extra))
        assert [e["owner"] for e in view["nodes"]["g0"]["quarantine"]] == ["NVSentinel", "ours"]

    def test_a_dra_problem_is_a_problem(self):
        view = cv.node_view(healthy_gpu_node("g0"), op.operands_by_node(healthy_pods("g0"))[0]["g0"])
        assert cv.node_problems(view) == []
        view["dra"]["problems"] = ["the kubelet plugin is not ready"]
        assert cv.node_problems(view) == ["dra"]

    def test_each_node_detail_keeps_its_nodes_and_totals_cover_all(self):
        nodes = [healthy_gpu_node("g0"), healthy_gpu_node("g1", ready="False")]
        shaped = {
            d: cv.cluster_view({"nodes": nodes, "pods": healthy_pods("g0", "g1")}, cv.ViewOptions(node_detail=d))
            for d in cv.NODE_DETAIL
        }
        full = shaped["all"]
        assert list(full["nodes"]) == list(full["node_summary"]) == ["g0", "g1"]
        assert shaped["problems"]["nodes"] == shaped["summary"]["nodes"] == {"g1": full["nodes"]["g1"]}
        assert shaped["problems"]["node_summary"] == {"g1": full["node_summary"]["g1"]}
        assert shaped["none"]["nodes"] == {}
        assert shaped["summary"]["node_summary"] == shaped["none"]["node_summary"] == full["node_summary"]
        assert all(view["totals"] == full["totals"] for view in shaped.values()) and full["totals"]["nodes"] == 2

    def test_an_unknown_node_detail_names_the_choices(self):
        with pytest.raises(ArgumentError, match="node_detail must be one of all, summary, problems, none"):
            cv.cluster_view({"nodes": [healthy_gpu_node("g0")], "pods": []}, cv.ViewOptions(node_detail="some"))
