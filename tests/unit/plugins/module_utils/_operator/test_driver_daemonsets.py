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


def test_a_driver_pod_on_every_node_its_daemonset_wants_lets_the_controller_build_its_state():
    assert state_refusals([daemonset(2)], PODS, [node("h100-0"), node("h100-1")]) == []


def test_a_node_quarantined_with_a_taint_the_driver_does_not_tolerate_is_named_with_the_pod_to_delete():
    # the DaemonSet's status still counts 2: it is recomputed only when the DaemonSet syncs
    (text,) = state_refusals([daemonset(2)], PODS, NODES)
    assert "driver DaemonSet gpu-operator/nvidia-driver-daemonset runs a pod on node h100-1 (taint " in text
    assert "nvidia.com/gpu-xid-error=true:NoSchedule not tolerated), which it does not want" in text
    assert "it wants 1 pod(s) but owns 2, and NVIDIA's upgrade controller builds no upgrade state" in text
    # the cordon's own taint is tolerated by every DaemonSet pod; the remediation system's is the one named
    assert "unschedulable" not in text and "h100-0" not in text
    assert text.endswith("kubectl -n gpu-operator delete pod nvidia-driver-daemonset-h100-1")


def test_a_tolerated_taint_is_no_refusal():
    tolerant = daemonset(2, [{"key": "nvidia.com/gpu-xid-error", "operator": "Exists"}])
    assert state_refusals([tolerant], PODS, NODES) == []


def test_only_driver_daemonsets_count_and_only_their_own_pods():
    plugin = daemonset(2, component="nvidia-device-plugin")
    assert driver_daemonsets([plugin, daemonset(2)]) == [daemonset(2)]
    assert state_refusals([plugin], PODS, NODES) == []
    assert state_refusals([daemonset(2)], [pod("h100-1", uid="other")], NODES) == []
