"""Whether NVIDIA's upgrade controller can build its upgrade state: a driver DaemonSet that owns another number of pods
than it wants stops every upgrade, and the refusal names the node it no longer wants, the taint and the fix."""

from __future__ import annotations

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.driver_daemonsets import (
    driver_daemonsets,
    state_refusals,
)

NS = "gpu-operator"
XID = {"key": "nvidia.com/gpu-xid-error", "value": "true", "effect": "NoSchedule"}


def daemonset(desired, tolerations=(), component="nvidia-driver"):
    return {
        "metadata": {"name": "nvidia-driver-daemonset", "namespace": NS, "uid": "ds-1"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/component": component}},
                "spec": {"tolerations": list(tolerations)},
            }
        },
        "status": {"desiredNumberScheduled": desired},
    }


def pod(node, uid="ds-1"):
    return {
        "metadata": {
            "name": "nvidia-driver-daemonset-%s" % node,
            "namespace": NS,
            "ownerReferences": [{"kind": "DaemonSet", "uid": uid}],
        },
        "spec": {"nodeName": node},
    }


def node(name, *taints):
    return {"metadata": {"name": name}, "spec": {"taints": list(taints)}}


NODES = [node("h100-0"), node("h100-1", XID, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})]
PODS = [pod("h100-0"), pod("h100-1")]


def test_a_driver_daemonset_that_wants_as_many_pods_as_it_owns_lets_the_controller_build_its_state():
    assert state_refusals([daemonset(2)], PODS, NODES) == []


def test_a_node_quarantined_with_a_taint_the_driver_does_not_tolerate_is_named_with_the_pod_to_delete():
    (text,) = state_refusals([daemonset(1)], PODS, NODES)
    assert "driver DaemonSet gpu-operator/nvidia-driver-daemonset owns 2 pod(s) but wants 1" in text
    assert "moves no node" in text
    # the cordon's own taint is tolerated by every DaemonSet pod; the remediation system's is the one named
    assert "node h100-1 (taint nvidia.com/gpu-xid-error=true:NoSchedule not tolerated)" in text
    assert text.endswith("kubectl -n gpu-operator delete pod nvidia-driver-daemonset-h100-1")
    assert "h100-0" not in text


def test_a_tolerated_taint_is_not_the_cause_and_a_missing_pod_is_waited_for():
    tolerant = daemonset(3, [{"key": "nvidia.com/gpu-xid-error", "operator": "Exists"}])
    (text,) = state_refusals([tolerant], PODS, NODES)
    assert "owns 2 pod(s) but wants 3" in text and "not tolerated" not in text
    assert "wait until its pods are scheduled: kubectl -n gpu-operator get pods" in text


def test_only_driver_daemonsets_count_and_only_their_own_pods():
    plugin = daemonset(0, component="nvidia-device-plugin")
    assert driver_daemonsets([plugin, daemonset(2)]) == [daemonset(2)]
    assert state_refusals([plugin], PODS, NODES) == []
    assert state_refusals([daemonset(0)], [pod("h100-0", uid="other")], NODES) == []
