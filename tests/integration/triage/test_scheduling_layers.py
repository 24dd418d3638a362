"""gpu_triage_info explains a Pending GPU pod from the real kube-scheduler's FailedScheduling events, real taints,
selectors, ResourceQuotas, LimitRanges and PriorityClasses, and from Kueue/Volcano objects (minimal CRDs of our
own; no queue controller runs). The module runs as the least-privilege identity."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.integration.simop_helpers import REPO_ROOT, wait_for

TAINT_KEY = "gpuops.io/triage-reserved"
KUEUE, VOLCANO = "kueue.x-k8s.io", "scheduling.volcano.sh"


@pytest.fixture
def nodes(gpu_operator):
    """``(big, other_big, small)``: the two 8-GPU H100 nodes and the 1-GPU T4 node, healthy."""
    gpu_operator.wait_healthy(timeout=90)
    h100 = sorted(n for n in gpu_operator.gpu_nodes if n.startswith("h100"))
    t4 = sorted(n for n in gpu_operator.gpu_nodes if n.startswith("t4"))
    return h100[0], h100[1], t4[0]


def blocking(result, layer=None):
    return [f for f in result["findings"] if f["severity"] == "error" and (layer is None or f["layer"] == layer)]


def scheduler_counts(result):
    """``{filter: nodes}`` from the real scheduler's message as the module parsed it."""
    counts = {}
    for reason in result["pods"][0]["scheduler_event"]["reasons"]:
        counts[reason["filter"]] = counts.get(reason["filter"], 0) + reason["count"]
    return counts


def test_untolerated_taint_on_one_node_and_too_few_gpus_on_the_others(nodes, kube, triage):
    big, other_big, small = nodes
    ns = kube.namespace()
    kube.pod(ns, "filler", gpus=8, nodeSelector={"kubernetes.io/hostname": other_big})
    kube.bound(ns, "filler")
    kube.taint(big, TAINT_KEY, "team-a")
    kube.pod(ns, "train", gpus=2)
    kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/gpu")

    result = triage(pod="%s/train" % ns)

    assert result["first_failing_layer"] == "scheduling", result["summary"]
    taint, insufficient = blocking(result, "scheduling")
    # in the scheduler's own filter order: the taint first, then resources
    assert taint["reason"] == "UntoleratedTaint" and taint["nodes"] == [big]
    assert taint["evidence"]["taint"] == {"key": TAINT_KEY, "value": "team-a", "effect": "NoSchedule"}
    assert TAINT_KEY in taint["fix"]
    assert insufficient["reason"] == "InsufficientGPU" and insufficient["nodes"] == sorted([other_big, small])
    assert insufficient["evidence"]["per_node"][other_big] == {"allocatable": 8, "requested": 8, "free": 0}
    assert insufficient["evidence"]["per_node"][small]["free"] == 1
    # our per-node verdicts agree with the scheduler's counts (it also counts the tainted control plane and the
    # CPU node, which the module reports as nodes without GPUs)
    counts = scheduler_counts(result)
    without_gpus = next(f for f in result["findings"] if f["reason"] == "NodesWithoutGPUs")["nodes"]
    tainted = {
        n for n in without_gpus if any(t.effect == "NoSchedule" for t in kube.core.read_node(n).spec.taints or [])
    }
    assert counts["taint"] == len(taint["nodes"]) + len(tainted)
    assert counts["resources"] == len(insufficient["nodes"]) + len(set(without_gpus) - tainted)
    summary = result["summary"]
    assert summary.index("UntoleratedTaint") < summary.index("InsufficientGPU")


def test_more_gpus_than_any_node_has_is_named_impossible_not_a_taint_or_a_wait(nodes, kube, triage):
    big, other_big, _small = nodes
    ns = kube.namespace()
    kube.taint(big, TAINT_KEY, "team-a")
    kube.pod(ns, "train", gpus=16)
    kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/gpu")

    result = triage(pod="%s/train" % ns)

    # the taint on one 8-GPU node and the shortage are true, but removing or waiting would not place 16 GPUs
    assert [f["reason"] for f in result["findings"]] == ["LargerThanAnyNode"], result["summary"]
    impossible = result["findings"][0]
    assert result["first_failing_layer"] == "scheduling" and impossible["nodes"] == sorted([big, other_big])
    assert "asks for 16 nvidia.com/gpu, and the largest node has 8" in impossible["message"]
    assert "Ask for at most 8 nvidia.com/gpu per pod" in impossible["fix"]


def test_a_cordoned_node_comes_before_the_shortage_on_the_others(nodes, kube, triage):
    big, other_big, small = nodes
    kube.cordon(big)
    ns = kube.namespace()
    kube.pod(ns, "filler", gpus=8, nodeSelector={"kubernetes.io/hostname": other_big})
    kube.bound(ns, "filler")
    kube.pod(ns, "train", gpus=4)
    kube.failed_scheduling(ns, "train", contains="were unschedulable")

    result = triage(pod="%s/train" % ns)

    cordoned, insufficient = blocking(result, "scheduling")
    assert (cordoned["reason"], cordoned["nodes"]) == ("NodeCordoned", [big])
    assert "kubectl uncordon" in cordoned["fix"]
    assert (insufficient["reason"], insufficient["nodes"]) == ("InsufficientGPU", sorted([other_big, small]))
    assert scheduler_counts(result)["unschedulable"] == 1


def test_a_node_selector_nobody_matches(nodes, kube, triage):
    ns = kube.namespace()
    kube.pod(ns, "train", gpus=1, nodeSelector={"gpuops.io/rack": "r9"})
    kube.failed_scheduling(ns, "train", contains="didn't match Pod's node affinity/selector")

    result = triage(pod="%s/train" % ns)

    (selector,) = blocking(result, "scheduling")
    assert selector["reason"] == "NodeSelectorMismatch" and selector["nodes"] == sorted(nodes)
    assert "nodeSelector gpuops.io/rack" in selector["message"]
    assert {m["wanted"] for ms in selector["evidence"]["mismatches"].values() for m in ms} == {"r9"}


def test_a_mig_profile_no_node_advertises(nodes, kube, triage):
    ns = kube.namespace()
    kube.pod(ns, "train", gpus=1, resource="nvidia.com/mig-1g.10gb")
    kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/mig-1g.10gb")

    result = triage(pod="%s/train" % ns)

    (mig,) = blocking(result, "scheduling")
    assert mig["reason"] == "MIGResourceName"
    assert "nvidia.com/mig-1g.10gb" in mig["message"] and "nvidia.com/gpu" in mig["message"]
    capable = sorted(n for n, m in mig["evidence"]["nodes_mig"].items() if m["mig_capable"] == "true")
    assert capable == sorted(nodes[:2])  # the profile's MIG-capable H100s, named in the fix
    assert all(n in mig["fix"] for n in capable)


def test_a_job_over_the_namespace_gpu_quota(nodes, kube, triage):
    ns = kube.namespace()
    kube.core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "gpu-quota"}, "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}}
    )
    kube.job(ns, "train", gpus=2)
    kube.failed_create(ns, "train", contains="exceeded quota")

    result = triage(namespace=ns)

    assert result["first_failing_layer"] == "quota"
    (quota,) = blocking(result)
    assert quota["reason"] == "QuotaExceeded" and quota["evidence"]["quota"] == "gpu-quota"
    assert quota["evidence"]["limited"] == "requests.nvidia.com/gpu=1"
    assert quota["evidence"]["requested"] == "requests.nvidia.com/gpu=2"
    assert result["pods"] == []  # the pod was never created


def test_a_job_over_the_limit_range(nodes, kube, triage):
    ns = kube.namespace()
    kube.core.create_namespaced_limit_range(
        ns,
        {
            "metadata": {"name": "gpu-limits"},
            "spec": {"limits": [{"type": "Container", "max": {"nvidia.com/gpu": "1"}}]},
        },
    )
    kube.job(ns, "train", gpus=2)
    kube.failed_create(ns, "train", contains="maximum nvidia.com/gpu usage per Container is 1")

    result = triage(namespace=ns)

    (limit,) = blocking(result)
    assert (limit["layer"], limit["reason"]) == ("quota", "LimitRangeViolation")
    # the API server defaults the limit and request to the max; all three are evidence
    assert result["limit_ranges"] == [
        {
            "max": {"nvidia.com/gpu": "1"},
            "default": {"nvidia.com/gpu": "1"},
            "defaultRequest": {"nvidia.com/gpu": "1"},
            "limit_range": "gpu-limits",
            "type": "Container",
        }
    ]


def test_preemption_cannot_help_below_a_higher_priority_gpu_pod(nodes, kube, triage):
    big = nodes[0]
    kube.priority_class("triage-high", 100000)
    kube.priority_class("triage-low", 10)
    ns = kube.namespace()
    kube.pod(ns, "filler", gpus=8, priorityClassName="triage-high", nodeSelector={"kubernetes.io/hostname": big})
    kube.bound(ns, "filler")
    kube.pod(ns, "train", gpus=1, priorityClassName="triage-low", nodeSelector={"kubernetes.io/hostname": big})
    kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/gpu")

    result = triage(pod="%s/train" % ns)

    preemption = next(f for f in result["findings"] if f["layer"] == "preemption")
    assert preemption["reason"] == "PreemptionNotPossible" and preemption["nodes"] == [big]
    assert preemption["evidence"]["blocking_gpu_pods"] == [
        {"pod": "%s/filler" % ns, "node": big, "priority": 100000, "gpus": {"nvidia.com/gpu": 8}}
    ]
    assert preemption["evidence"]["priority_class"] == "triage-low" and preemption["evidence"]["priority"] == 10
    assert preemption["evidence"]["scheduler_preemption"]  # the scheduler's own preemption verdict is kept


def test_preemption_policy_never_keeps_a_high_priority_pod_waiting(nodes, kube, triage):
    big = nodes[0]
    kube.priority_class("triage-urgent-no-preempt", 100000, preemption_policy="Never")
    ns = kube.namespace()
    kube.pod(ns, "filler", gpus=8, nodeSelector={"kubernetes.io/hostname": big})
    kube.bound(ns, "filler")
    kube.pod(
        ns, "train", gpus=1, priorityClassName="triage-urgent-no-preempt", nodeSelector={"kubernetes.io/hostname": big}
    )
    message = kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/gpu")
    assert "preemptionPolicy=Never" in message  # the real scheduler's own words

    result = triage(pod="%s/train" % ns)

    disabled = next(f for f in blocking(result) if f["layer"] == "preemption")
    assert disabled["reason"] == "PreemptionDisabled"
    assert disabled["evidence"]["lower_priority_gpu_pods"][0]["pod"] == "%s/filler" % ns


def test_a_kueue_gated_pod_whose_cluster_queue_is_full(nodes, kube, triage):
    kube.crd(KUEUE, "clusterqueues", "ClusterQueue", "Cluster")
    kube.crd(KUEUE, "localqueues", "LocalQueue", "Namespaced")
    kube.crd(KUEUE, "workloads", "Workload", "Namespaced")
    ns = kube.namespace()
    kube.custom_object(
        KUEUE,
        "v1beta1",
        "clusterqueues",
        {
            "apiVersion": "%s/v1beta1" % KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu-cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}],
                    }
                ]
            },
        },
        status={
            "conditions": [
                {"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads"}
            ],
            "flavorsReservation": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "2"}]}],
            "pendingWorkloads": 1,
        },
    )
    kube.custom_object(
        KUEUE,
        "v1beta1",
        "localqueues",
        {
            "apiVersion": "%s/v1beta1" % KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "team"},
            "spec": {"clusterQueue": "gpu-cq"},
        },
        namespace=ns,
    )
    pod = kube.pod(
        ns,
        "train",
        gpus=1,
        labels={"kueue.x-k8s.io/queue-name": "team"},
        schedulingGates=[{"name": "kueue.x-k8s.io/admission"}],
    )
    # the real scheduler holds a gated pod back and says so
    wait_for(
        lambda: any(
            c.type == "PodScheduled" and c.reason == "SchedulingGated"
            for c in kube.core.read_namespaced_pod("train", ns).status.conditions or []
        ),
        30,
        what="PodScheduled=False SchedulingGated",
    )
    assert pod.metadata.uid

    result = triage(pod="%s/train" % ns)

    assert result["queue_apis"] == {KUEUE: True, VOLCANO: False}
    assert [(f["layer"], f["reason"]) for f in blocking(result)] == [("queue", "KueueQuotaExhausted")]
    quota = blocking(result)[0]["evidence"]
    assert quota["cluster_queue"] == "gpu-cq" and quota["local_queue"] == "team"
    assert quota["quota"]["nvidia.com/gpu"] == {"nominal": 2, "reserved": 2, "requested": 1}
    assert result["first_failing_layer"] == "queue"


def test_a_volcano_pod_whose_queue_is_closed(nodes, kube, triage):
    kube.crd(VOLCANO, "queues", "Queue", "Cluster")
    kube.crd(VOLCANO, "podgroups", "PodGroup", "Namespaced")
    ns = kube.namespace()
    kube.custom_object(
        VOLCANO,
        "v1beta1",
        "queues",
        {
            "apiVersion": "%s/v1beta1" % VOLCANO,
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {"weight": 1},
        },
        status={"state": "Closed"},
    )
    kube.custom_object(
        VOLCANO,
        "v1beta1",
        "podgroups",
        {
            "apiVersion": "%s/v1beta1" % VOLCANO,
            "kind": "PodGroup",
            "metadata": {"name": "train-pg"},
            "spec": {"queue": "research", "minMember": 1},
        },
        status={"phase": "Pending"},
        namespace=ns,
    )
    kube.pod(ns, "train", gpus=1, schedulerName="volcano", annotations={"scheduling.k8s.io/group-name": "train-pg"})

    result = triage(pod="%s/train" % ns)

    assert result["queue_apis"] == {KUEUE: False, VOLCANO: True}
    assert [(f["layer"], f["reason"]) for f in blocking(result)] == [("queue", "VolcanoQueueClosed")]
    assert blocking(result)[0]["evidence"]["queue_state"] == "Closed"
    assert result["pods"][0]["scheduler_name"] == "volcano"


def test_the_diagnose_playbook_prints_the_summary_and_rejects_bad_input(nodes, kube, testbed, ansible_env):
    env, _base = ansible_env
    ns = kube.namespace()
    kube.pod(ns, "train", gpus=1, nodeSelector={"gpuops.io/rack": "r9"})
    kube.failed_scheduling(ns, "train")

    def play(*extra):
        cmd = [
            str(sys.executable.rsplit("/", 1)[0] + "/ansible-playbook"),
            str(REPO_ROOT / "playbooks" / "diagnose.yml"),
        ]
        cmd += [
            "-e",
            "gpuops_kubeconfig=%s" % testbed.sa_kubeconfig,
            "-e",
            "ansible_python_interpreter=%s" % sys.executable,
        ]
        for item in extra:
            cmd += ["-e", item]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)

    mark = testbed.audit_mark()
    ok = play("pod=%s/train" % ns)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-2000:]
    assert "pod %s/train (Pending, nvidia.com/gpu=1): first failing layer: scheduling" % ns in ok.stdout
    assert "NodeSelectorMismatch" in ok.stdout and "fix:" in ok.stdout
    assert testbed.audit_writes(mark) == []

    gate = play("namespace=%s" % ns, "gpuops_diagnose_fail_on_finding=true")
    assert gate.returncode != 0 and "first failing layer: scheduling" in gate.stdout

    for bad in (["pod=train"], ["pod=%s/train" % ns, "node=%s" % nodes[0]], []):
        proc = play(*bad)
        assert proc.returncode != 0
        assert "Give exactly one of -e pod=NAMESPACE/NAME, -e namespace=NAMESPACE or -e node=NODE" in proc.stdout


@pytest.mark.parametrize("target", [{"namespace": "no-such-ns"}, {"pod": "no-such-ns/train"}])
def test_a_namespace_that_does_not_exist_is_named_not_read_as_healthy_or_as_a_missing_pod(triage, target):
    result = triage(**target)

    assert result["first_failing_layer"] == "scheduling"
    (missing,) = result["findings"]
    assert (missing["reason"], missing["severity"]) == ("NamespaceNotFound", "error")
    assert "namespace no-such-ns does not exist" in missing["message"] and "kubectl get namespaces" in missing["fix"]
