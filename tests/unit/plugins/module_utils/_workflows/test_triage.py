"""Specification of module_utils/_workflows/triage/diagnose.py: the layer walk, from plain API dicts (no cluster)."""

from __future__ import annotations

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.diagnose import (
    LAYERS,
    Snapshot,
    diagnose,
)

NS = "gpu-operator"
POLICY = {"metadata": {"name": "cluster-policy"}, "spec": {"driver": {"enabled": True}}, "status": {"state": "ready"}}
APPS = {
    "driver": {"app.kubernetes.io/component": "nvidia-driver", "app": "nvidia-driver-daemonset"},
    "toolkit": {"app": "nvidia-container-toolkit-daemonset"},
    "plugin": {"app": "nvidia-device-plugin-daemonset"},
    "validator": {"app": "nvidia-operator-validator"},
}


def gpu_node(name, gpus=8, alloc=None, taints=(), labels=None, ready=True):
    alloc = gpus if alloc is None else alloc
    return {
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": str(gpus),
                **(labels or {}),
            },
        },
        "spec": {"taints": list(taints)},
        "status": {
            "capacity": {"nvidia.com/gpu": str(alloc if alloc == 0 else gpus)},
            "allocatable": {"nvidia.com/gpu": str(alloc)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}],
        },
    }


def cpu_node(name):
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def operand(kind, node, ready=True, crash_message=None, waiting=None):
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    cs = {"name": "ctr", "ready": ready, "restartCount": 0, "state": {"running": {}}}
    if crash_message:
        cs.update(
            restartCount=5,
            state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
            lastState={"terminated": {"reason": "Error", "exitCode": 1, "message": crash_message}},
        )
    elif waiting:
        cs.update(state={"waiting": {"reason": waiting}})
    status["containerStatuses"] = [cs]
    return {
        "metadata": {"name": "%s-%s" % (kind, node), "namespace": NS, "labels": APPS[kind]},
        "spec": {"nodeName": node},
        "status": status,
    }


def healthy_operands(node, **override):
    return [override.get(k) or operand(k, node) for k in ("driver", "toolkit", "plugin", "validator")]


def gpu_pod(name="train", gpus=1, resource="nvidia.com/gpu", node=None, priority=0, uid=None, **spec):
    body = {
        "metadata": {"name": name, "namespace": "ml", "uid": uid or "uid-" + name, "labels": spec.pop("labels", {})},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {resource: str(gpus)}}}],
            "priority": priority,
            **spec,
        },
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def event(obj, reason, message, kind="Pod", ns="ml", uid=None, type_="Warning", when="2026-01-01T00:00:00Z"):
    return {
        "metadata": {"name": "%s.1" % obj, "namespace": ns},
        "involvedObject": {"kind": kind, "name": obj, "namespace": ns, "uid": uid},
        "reason": reason,
        "message": message,
        "type": type_,
        "lastTimestamp": when,
    }


def run(target_pod=None, nodes=(), operators=(), bound=(), events=(), op_events=(), **extra):
    snap = Snapshot(
        nodes=list(nodes),
        operator_pods=list(operators),
        operator_events=list(op_events),
        bound_pods=list(bound),
        targets=[target_pod] if target_pod else [],
        events=list(events),
        cluster_policies=extra.pop("policies", [POLICY]),
        **extra,
    )
    name = target_pod["metadata"]["name"] if target_pod else extra.get("missing", "gone")
    return diagnose(snap, {"kind": "pod", "namespace": "ml", "name": name})


def reasons(result, layer=None):
    return [f["reason"] for f in result["findings"] if layer is None or f["layer"] == layer]


def errors(result):
    return [(f["layer"], f["reason"]) for f in result["findings"] if f["severity"] == "error"]


class TestDriverLayer:
    KERNEL = "Unable to find a match: kernel-headers-5.15.0 kernel-devel-5.15.0\nCould not resolve Linux kernel version"

    def test_a_crashing_driver_on_the_only_candidate_is_the_first_failing_layer(self):
        p = gpu_pod(nodeSelector={"kubernetes.io/hostname": "g0"})
        result = run(
            p,
            nodes=[gpu_node("g0", alloc=0), gpu_node("g1")],
            operators=healthy_operands("g0", driver=operand("driver", "g0", ready=False, crash_message=self.KERNEL)),
            events=[
                event(
                    "train",
                    "FailedScheduling",
                    "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
                    "1 node(s) didn't match Pod's node affinity/selector.",
                    uid="uid-train",
                )
            ],
            logs={"driver-g0": {"text": "line1\nCould not resolve Linux kernel version\n"}},
        )
        assert result["first_failing_layer"] == "driver"
        crash = result["findings"][0]
        assert crash["reason"] == "DriverCrashLoop" and crash["nodes"] == ["g0"] and crash["pods"] == ["ml/train"]
        assert "kernel headers" in crash["message"] and "Could not resolve Linux kernel version" in crash["message"]
        assert crash["evidence"]["last_termination"]["reason"] == "Error"
        assert crash["evidence"]["log_tail"][-1] == "Could not resolve Linux kernel version"
        assert "precompiled" in crash["fix"]
        # the scheduler's view is still there, and it points back at the zero allocatable
        insufficient = next(f for f in result["findings"] if f["reason"] == "InsufficientGPU")
        assert "g0 advertise(s) 0" in insufficient["message"]

    def test_secure_boot_and_nouveau_messages_name_their_fix(self):
        for message, needle in (
            ("Loading of unsigned module is rejected", "Secure Boot"),
            ("when another driver, such as nouveau, is present", "nouveau"),
        ):
            result = diagnose(
                Snapshot(
                    nodes=[gpu_node("g0", alloc=0)],
                    operator_pods=healthy_operands(
                        "g0", driver=operand("driver", "g0", ready=False, crash_message=message)
                    ),
                    cluster_policies=[POLICY],
                ),
                {"kind": "node", "namespace": None, "name": "g0"},
            )
            assert result["first_failing_layer"] == "driver"
            assert needle.lower() in result["findings"][0]["fix"].lower()

    def test_a_broken_node_does_not_block_a_pod_that_fits_elsewhere(self):
        result = run(
            gpu_pod(),
            nodes=[gpu_node("g0", alloc=0), gpu_node("g1")],
            operators=healthy_operands("g0", driver=operand("driver", "g0", ready=False, crash_message="boom"))
            + healthy_operands("g1"),
        )
        crash = next(f for f in result["findings"] if f["reason"] == "DriverCrashLoop")
        assert crash["severity"] == "warning"
        assert "FitsNow" in reasons(result) and result["first_failing_layer"] is None

    def test_host_driver_nodes_have_no_driver_pod_to_check(self):
        node = gpu_node("g0", labels={"nvidia.com/gpu.deploy.driver": "pre-installed"})
        ops = [operand(k, "g0") for k in ("toolkit", "plugin", "validator")]
        result = diagnose(
            Snapshot(nodes=[node], operator_pods=ops, cluster_policies=[POLICY]),
            {"kind": "node", "namespace": None, "name": "g0"},
        )
        assert errors(result) == [] and result["first_failing_layer"] is None

    def test_in_gpucluster_mode_the_operands_are_the_operators_and_no_missing_cluster_policy_is_reported(self):
        """26.7's GPUCluster stands where the ClusterPolicy stood: the node's stack is the operator's."""
        gpu_cluster = {"metadata": {"name": "gpu-cluster"}, "status": {"state": "ready"}}
        ops = healthy_operands("g0", driver=operand("driver", "g0", ready=False, crash_message="boom"))
        result = diagnose(
            Snapshot(nodes=[gpu_node("g0")], operator_pods=ops, cluster_policies=None, gpu_cluster=gpu_cluster),
            {"kind": "node", "namespace": None, "name": "g0"},
        )
        assert "NoClusterPolicy" not in reasons(result)
        assert result["first_failing_layer"] == "driver" and ("driver", "DriverCrashLoop") in errors(result)

    def test_without_any_operator_object_the_node_says_so_and_what_was_still_checked(self):
        result = diagnose(
            Snapshot(nodes=[gpu_node("g0")], operator_pods=healthy_operands("g0"), cluster_policies=None),
            {"kind": "node", "namespace": None, "name": "g0"},
        )
        (info,) = [f for f in result["findings"] if f["reason"] == "NoClusterPolicy"]
        assert info["severity"] == "info" and info["nodes"] == ["g0"]
        assert info["message"].startswith("no GPU Operator ClusterPolicy or GPUCluster: only the operand pods that run")


class TestToolkitAndDevicePlugin:
    def node_result(self, node, ops, op_events=()):
        return diagnose(
            Snapshot(nodes=[node], operator_pods=ops, operator_events=list(op_events), cluster_policies=[POLICY]),
            {"kind": "node", "namespace": None, "name": node["metadata"]["name"]},
        )

    def test_no_nvidia_runtime_is_the_toolkit_layer(self):
        ops = healthy_operands("g0", plugin=operand("plugin", "g0", ready=False, waiting="ContainerCreating"))
        sandbox = event(
            "plugin-g0",
            "FailedCreatePodSandBox",
            'Failed to create pod sandbox: ... no runtime for "nvidia" is configured',
            ns=NS,
        )
        result = self.node_result(gpu_node("g0", alloc=0), ops, [sandbox])
        assert result["first_failing_layer"] == "toolkit"
        assert errors(result)[0] == ("toolkit", "RuntimeNotConfigured")
        assert ("device-plugin", "DevicePluginNotReady") in errors(result)

    def test_a_running_plugin_that_advertises_nothing(self):
        result = self.node_result(gpu_node("g0", alloc=0), healthy_operands("g0"))
        assert errors(result) == [("device-plugin", "DevicePluginNotAdvertising")]
        assert result["findings"][0]["evidence"]["gpu_count_label"] == 8

    def test_a_failing_validator_at_the_layer_its_validation_names_with_its_message(self):
        ops = healthy_operands(
            "g0", validator=operand("validator", "g0", ready=False, crash_message="driver-validation: failed")
        )
        result = self.node_result(gpu_node("g0"), ops)
        assert errors(result) == [("driver", "ValidatorFailing")]
        assert "driver-validation: failed" in result["findings"][0]["message"]

    def test_unhealthy_gpus_fail_the_node_at_the_gpu_health_layer(self):
        node = gpu_node("g0")
        node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
        result = self.node_result(node, healthy_operands("g0"))
        assert [(f["layer"], f["reason"], f["severity"]) for f in result["findings"]] == [
            ("gpu-health", "UnhealthyGPUs", "error")
        ]
        assert result["first_failing_layer"] == "gpu-health"

    def test_layers_are_reported_in_walk_order(self):
        result = self.node_result(gpu_node("g0", alloc=0), healthy_operands("g0"))
        assert [entry["name"] for entry in result["layers"]] == list(LAYERS)
        assert [entry["status"] for entry in result["layers"]] == [
            "ok",  # driver
            "ok",  # node
            "ok",  # toolkit
            "failed",  # device-plugin
            "skipped",  # dra: no node uses it
            "ok",  # gpu-health
            "ok",  # mig
            "skipped",  # scheduling, quota, preemption, queue: a node triage
            "skipped",
            "skipped",
            "skipped",
            "skipped",  # workload: no finding
            "ok",  # monitoring
        ]


class TestScheduling:
    TAINT = {"key": "gpuops.io/reserved", "value": "team-a", "effect": "NoSchedule"}

    def test_taint_on_some_nodes_and_insufficient_on_others_in_filter_order(self):
        filler = gpu_pod("filler", gpus=8, node="g1")
        result = run(
            gpu_pod(gpus=2),
            nodes=[gpu_node("g0", taints=[self.TAINT]), gpu_node("g1"), gpu_node("t4", gpus=1), cpu_node("cpu")],
            operators=healthy_operands("g0") + healthy_operands("g1") + healthy_operands("t4"),
            bound=[filler],
        )
        sched = [f for f in result["findings"] if f["layer"] == "scheduling" and f["severity"] == "error"]
        assert [f["reason"] for f in sched] == ["UntoleratedTaint", "InsufficientGPU"]
        assert sched[0]["evidence"]["taint"]["key"] == "gpuops.io/reserved" and sched[0]["nodes"] == ["g0"]
        assert sched[1]["nodes"] == ["g1", "t4"]
        assert sched[1]["evidence"]["per_node"]["g1"] == {"allocatable": 8, "requested": 8, "free": 0}
        assert "gpuops.io/reserved" in sched[0]["fix"]
        assert result["first_failing_layer"] == "scheduling"

    def test_selector_mismatch_names_the_key(self):
        result = run(
            gpu_pod(nodeSelector={"gpuops.io/pool": "a100"}), nodes=[gpu_node("g0", labels={"gpuops.io/pool": "h100"})]
        )
        finding = next(f for f in result["findings"] if f["reason"] == "NodeSelectorMismatch")
        assert "nodeSelector gpuops.io/pool" in finding["message"]

    def test_a_mig_profile_nobody_advertises(self):
        node = gpu_node("g0", labels={"nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "all-disabled"})
        result = run(gpu_pod(resource="nvidia.com/mig-1g.10gb"), nodes=[node], operators=healthy_operands("g0"))
        finding = next(f for f in result["findings"] if f["layer"] == "scheduling" and f["severity"] == "error")
        assert finding["reason"] == "MIGResourceName"
        assert "nvidia.com/mig-1g.10gb" in finding["message"] and "nvidia.com/gpu" in finding["message"]
        assert "g0" in finding["fix"]

    def test_whole_gpus_asked_of_nodes_that_only_advertise_mig_slices(self):
        node = gpu_node("g0")
        node["status"]["allocatable"] = {"nvidia.com/mig-3g.40gb": "16"}
        node["status"]["capacity"] = {"nvidia.com/mig-3g.40gb": "16"}
        result = run(gpu_pod(), nodes=[node], operators=healthy_operands("g0"))
        finding = next(f for f in result["findings"] if f["reason"] == "MIGResourceName")
        assert "nvidia.com/mig-3g.40gb" in finding["fix"]

    def test_a_reason_that_is_not_about_gpus_still_blocks_a_pod_whose_gpus_fit(self):
        message = "0/1 nodes are available: 1 Insufficient memory."
        result = run(
            gpu_pod(),
            nodes=[gpu_node("g0")],
            operators=healthy_operands("g0"),
            events=[event("train", "FailedScheduling", message, uid="uid-train")],
        )
        assert "FitsNow" in reasons(result)
        assert errors(result) == [("scheduling", "SchedulerOther")]
        assert result["first_failing_layer"] == "scheduling"

    def test_the_scheduler_event_is_parsed_into_the_pod_result(self):
        message = (
            "0/1 nodes are available: 1 Insufficient cpu. "
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )
        result = run(
            gpu_pod(gpus=1),
            nodes=[gpu_node("g0")],
            events=[event("train", "FailedScheduling", message, uid="uid-train")],
        )
        assert result["pods"][0]["scheduler_event"]["reasons"][0]["resource"] == "cpu"
        assert "SchedulerOther" in reasons(result)

    def test_a_taint_on_a_node_too_small_for_the_pod_is_no_finding(self):
        taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
        nodes = [gpu_node("g0", gpus=1, taints=[taint]), gpu_node("g1")]
        result = run(gpu_pod(gpus=2), nodes=nodes, bound=[gpu_pod("busy", gpus=8, node="g1")])
        # tolerating g0's taint would not place a 2-GPU pod on a 1-GPU node
        assert "UntoleratedTaint" not in reasons(result) and "InsufficientGPU" in reasons(result)

    def test_more_gpus_than_any_node_has_is_impossible_before_any_taint_shortage_or_priority(self):
        taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
        nodes = [gpu_node("g0", alloc=2), gpu_node("g1", taints=[taint]), gpu_node("g2", gpus=4)]
        result = run(gpu_pod(gpus=16), nodes=nodes, bound=[gpu_pod("busy", gpus=6, node="g0")])
        assert reasons(result) == ["LargerThanAnyNode"]  # no toleration, freed GPU or priority would place it
        (impossible,) = result["findings"]
        assert result["first_failing_layer"] == "scheduling" and impossible["nodes"] == ["g0", "g1"]
        assert (
            "asks for 16 nvidia.com/gpu, and the largest node has 8 (g0, g1): no node could ever run it"
            in (impossible["message"])
        )
        assert impossible["fix"].startswith("Ask for at most 8 nvidia.com/gpu per pod")


class TestQuotaPriorityQueues:
    def test_quota_rejection_comes_from_the_controller_event(self):
        message = (
            'Error creating: pods "job-x" is forbidden: exceeded quota: gpu-quota, requested: '
            "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1"
        )
        snap = Snapshot(
            nodes=[gpu_node("g0")],
            events=[event("job", "FailedCreate", message, kind="Job")],
            cluster_policies=[POLICY],
        )
        result = diagnose(snap, {"kind": "namespace", "namespace": "ml", "name": None})
        finding = result["findings"][0]
        assert (finding["layer"], finding["reason"]) == ("quota", "QuotaExceeded")
        assert (
            finding["evidence"]["quota"] == "gpu-quota"
            and finding["evidence"]["limited"] == "requests.nvidia.com/gpu=1"
        )
        assert result["first_failing_layer"] == "quota"

    def test_limit_range_rejection(self):
        message = (
            'Error creating: pods "job-x" is forbidden: maximum nvidia.com/gpu usage per Container is 1, but limit is 2'
        )
        snap = Snapshot(events=[event("job", "FailedCreate", message, kind="Job")])
        result = diagnose(snap, {"kind": "namespace", "namespace": "ml", "name": None})
        assert errors(result) == [("quota", "LimitRangeViolation")]

    def test_a_missing_pod_points_at_the_namespace_rejections(self):
        message = (
            'Error creating: pods "x" is forbidden: exceeded quota: q, requested: requests.nvidia.com/gpu=1, '
            "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
        )
        result = run(None, events=[event("job", "FailedCreate", message, kind="Job")])
        assert sorted(reasons(result)) == ["PodNotFound", "QuotaExceeded"]
        assert errors(result) == [("quota", "QuotaExceeded")]

    def test_preemption_cannot_help_when_every_gpu_pod_has_higher_priority(self):
        filler = gpu_pod("filler", gpus=8, node="g0", priority=1000)
        result = run(
            gpu_pod(priority=10, priorityClassName="low"),
            nodes=[gpu_node("g0")],
            operators=healthy_operands("g0"),
            bound=[filler],
        )
        finding = next(f for f in result["findings"] if f["layer"] == "preemption")
        assert finding["reason"] == "PreemptionNotPossible"
        assert finding["evidence"]["blocking_gpu_pods"][0]["pod"] == "ml/filler"

    def test_preemption_policy_never_with_victims_is_an_error(self):
        filler = gpu_pod("filler", gpus=8, node="g0", priority=0)
        result = run(
            gpu_pod(priority=10, preemptionPolicy="Never"),
            nodes=[gpu_node("g0")],
            operators=healthy_operands("g0"),
            bound=[filler],
        )
        assert ("preemption", "PreemptionDisabled") in errors(result)

    def test_kueue_cluster_queue_without_room(self):
        p = gpu_pod(labels={"kueue.x-k8s.io/queue-name": "lq"}, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
        kueue = {
            "localqueues": [{"metadata": {"name": "lq", "namespace": "ml"}, "spec": {"clusterQueue": "cq"}}],
            "clusterqueues": [
                {
                    "metadata": {"name": "cq"},
                    "spec": {
                        "resourceGroups": [
                            {"flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}]}
                        ]
                    },
                    "status": {
                        "flavorsReservation": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "total": "2"}]}],
                        "pendingWorkloads": 3,
                    },
                }
            ],
            "workloads": [],
        }
        result = run(p, nodes=[gpu_node("g0")], operators=healthy_operands("g0"), kueue=kueue)
        assert errors(result) == [("queue", "KueueQuotaExhausted")]
        assert result["findings"][0]["evidence"]["quota"]["nvidia.com/gpu"] == {
            "nominal": 2,
            "reserved": 2,
            "requested": 1,
        }
        assert not [f for f in result["findings"] if f["layer"] == "scheduling" and f["severity"] == "error"]

    def test_kueue_gate_without_kueue(self):
        p = gpu_pod(schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
        assert errors(run(p, nodes=[gpu_node("g0")], operators=healthy_operands("g0"))) == [
            ("queue", "KueueNotInstalled")
        ]

    def test_volcano_queue_closed(self):
        p = gpu_pod(schedulerName="volcano")
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg"}
        volcano = {
            "podgroups": [{"metadata": {"name": "pg"}, "spec": {"queue": "q"}, "status": {"phase": "Pending"}}],
            "queues": [
                {
                    "metadata": {"name": "q"},
                    "spec": {"capability": {"nvidia.com/gpu": "4"}},
                    "status": {"state": "Closed"},
                }
            ],
        }
        result = run(p, nodes=[gpu_node("g0")], operators=healthy_operands("g0"), volcano=volcano)
        assert errors(result) == [("queue", "VolcanoQueueClosed")]
        assert {entry["name"]: entry["status"] for entry in result["layers"]}["queue"] == "failed"


class TestNamespaceTriage:
    def test_findings_shared_by_pods_are_merged_and_each_pod_keeps_its_own(self):
        ops = healthy_operands("g0", driver=operand("driver", "g0", ready=False, crash_message="boom"))
        snap = Snapshot(
            nodes=[gpu_node("g0", alloc=0)],
            operator_pods=ops,
            targets=[gpu_pod("a"), gpu_pod("b")],
            cluster_policies=[POLICY],
        )
        result = diagnose(snap, {"kind": "namespace", "namespace": "ml", "name": None})
        crash = [f for f in result["findings"] if f["reason"] == "DriverCrashLoop"]
        assert len(crash) == 1 and crash[0]["pods"] == ["ml/a", "ml/b"]
        assert [p["first_failing_layer"] for p in result["pods"]] == ["driver", "driver"]
        assert result["summary_lines"][0] == "namespace ml: first failing layer: driver"
