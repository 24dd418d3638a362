"""Specs for reading the operator's status by release: from 26.7.0 a ClusterPolicy stays notReady while nodes upgrade;
on older (or unknown) releases a ready one proves nothing then, and nodes are judged by their own upgrade state and
driver version."""

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.readiness import readiness
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_status import (
    expected_driver,
    image_tag,
    policy_status,
    running_release,
    status_covers_upgrades,
    upgrading,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.upgrade import check_upgrade

STATE = "nvidia.com/gpu-driver-upgrade-state"


def cluster_policy(state="ready", chart=None, version=None):
    labels = {}
    if chart:
        labels["helm.sh/chart"] = chart
    if version:
        labels["app.kubernetes.io/version"] = version
    return {
        "metadata": {"name": "cluster-policy", "labels": labels, "generation": 1},
        "spec": {"driver": {"version": "595.91.07"}},
        "status": {"state": state, "observedGeneration": 1},
    }


def operator_pod(image):
    return {
        "metadata": {"name": "gpu-operator-7c9f", "labels": {"app.kubernetes.io/component": "gpu-operator"}},
        "spec": {"containers": [{"image": image}]},
    }


# --- which release runs ----------------------------------------------------------------------------------------


def test_the_release_is_read_from_the_chart_labels_of_the_cluster_policy_first():
    assert running_release(cluster_policy(version="v26.7.0")) == (
        "26.7.0",
        "the ClusterPolicy's app.kubernetes.io/version label",
    )
    assert running_release(cluster_policy(chart="gpu-operator-v26.3.3"))[0] == "26.3.3"


def test_without_chart_labels_the_operator_pod_s_image_tag_names_the_release():
    pods = [operator_pod("nvcr.io/nvidia/gpu-operator:v26.7.1@sha256:abc")]
    assert running_release(cluster_policy(), pods) == ("26.7.1", "the image of pod gpu-operator-7c9f")


def test_an_unknown_release_is_none_and_its_status_is_not_taken_as_covering_upgrades():
    assert running_release(cluster_policy(), [operator_pod("registry/gpu-operator:latest")]) == (None, None)
    assert status_covers_upgrades(None) is False


@pytest.mark.parametrize("release, covers", [("26.7.0", True), ("26.7.1", True), ("26.3.3", False), ("25.10.1", False)])
def test_only_26_7_and_later_keep_the_cluster_policy_not_ready_during_upgrades(release, covers):
    assert status_covers_upgrades(release) is covers


def test_an_image_tag_drops_the_digest_and_the_registry_port():
    assert image_tag("registry:5000/nvidia/driver:595.91.07-ubuntu22.04@sha256:ff") == "595.91.07-ubuntu22.04"
    assert image_tag("driver") == ""


# --- nodes mid-upgrade -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state, held, mid",
    [
        ("upgrade-required", False, True),
        ("drain-required", False, True),
        ("pod-restart-required", False, True),
        ("upgrade-done", False, False),
        ("upgrade-failed", False, False),
        (None, False, False),
        ("upgrade-required", True, False),
    ],
)
def test_a_node_is_mid_upgrade_from_queued_to_uncordon_unless_held_by_the_skip_label(state, held, mid):
    assert upgrading(state, held) is mid


def test_on_26_7_a_not_ready_policy_with_nodes_upgrading_is_read_as_upgrading_not_as_a_failure():
    status = policy_status({"name": "cluster-policy", "state": "notReady"}, "26.7.0", {"gpu-1": "drain-required"})
    assert status["meaning"] == "upgrading" and status["upgrading"] == ["gpu-1"]
    assert "is not a failure" in status["text"] and "gpu-1 (drain-required)" in status["text"]


def test_on_older_releases_a_ready_policy_with_nodes_upgrading_proves_nothing():
    status = policy_status({"name": "cluster-policy", "state": "ready"}, "26.3.3", {"gpu-1": "upgrade-required"})
    assert status["meaning"] == "not-proven" and status["status_covers_upgrades"] is False
    assert "does not cover driver upgrades" in status["text"]


def test_with_no_node_upgrading_the_state_means_what_it_says():
    assert policy_status({"name": "cp", "state": "ready"}, "26.3.3", {})["meaning"] == "ready"
    assert policy_status({"name": "cp", "state": "notReady"}, "26.7.0", {})["meaning"] == "not-ready"


# --- gpu_operator's readiness wait -----------------------------------------------------------------------------


class Kube:
    """A stub of the collection's client: one ClusterPolicy, the given nodes and pods."""

    def __init__(self, policy, nodes, pods=()):
        self.policy, self.nodes, self.pods = policy, nodes, list(pods)

    def list_custom(self, group, version, plural, **kw):
        return [self.policy] if plural == "clusterpolicies" else []

    def list_core(self, resource, namespace=None, **kw):
        return self.nodes if resource == "nodes" else self.pods


def gpu_node(name, state=None, skip=False):
    labels = {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"}
    if state:
        labels[STATE] = state
    if skip:
        labels["nvidia.com/gpu-driver-upgrade.skip"] = "true"
    return {"metadata": {"name": name, "labels": labels}}


def test_the_state_is_told_of_the_object_the_operator_acts_on_a_gpucluster_or_none():
    gpu_cluster = {"kind": "GPUCluster", "name": "gpu-cluster", "state": "ready"}
    assert policy_status(gpu_cluster, "26.7.0", {})["text"] == "GPUCluster gpu-cluster is ready; no node is mid-upgrade"
    assert (
        policy_status({"name": "cp"}, "26.7.0", {})["text"] == "ClusterPolicy cp has no state; no node is mid-upgrade"
    )
    assert policy_status(None, None, {})["text"] == "no ClusterPolicy or GPUCluster found; no node is mid-upgrade"


def test_an_older_release_s_ready_policy_is_not_ready_while_a_node_upgrades():
    kube = Kube(
        cluster_policy(chart="gpu-operator-v26.3.3"),
        [gpu_node("gpu-0", "upgrade-done"), gpu_node("gpu-1", "drain-required")],
    )
    state = readiness(kube, "gpu-operator")
    assert state["ready"] is False and state["status_meaning"] == "not-proven"
    assert state["upgrading"] == ["gpu-1"] and "does not cover driver upgrades" in state["stale"][0]


def test_a_node_held_by_the_skip_label_does_not_hold_readiness_back():
    kube = Kube(cluster_policy(chart="gpu-operator-v26.7.0"), [gpu_node("gpu-0", "upgrade-required", skip=True)])
    state = readiness(kube, "gpu-operator")
    assert state["ready"] is True and state["release"] == "26.7.0" and state["upgrading"] == []


# --- the upgrade check of gpu_validate -------------------------------------------------------------------------


def view(state=None, skip=False, driver="595.91.07"):
    return {"name": "gpu-1", "upgrade_state": state, "upgrade_skip": skip, "gpu": {"driver_version": driver}}


def test_a_failed_upgrade_fails_the_node_at_the_driver_layer_with_the_retry_command():
    (f,) = check_upgrade(view("upgrade-failed"), "595.91.07")
    assert (f["check"], f["layer"]) == ("upgrade", "driver")
    assert "kubectl label node gpu-1 %s=upgrade-required --overwrite" % STATE in f["fix"]


def test_a_node_mid_upgrade_is_not_proven_whatever_the_cluster_policy_says():
    (f,) = check_upgrade(view("validation-required"), "595.91.07")
    assert "under way" in f["evidence"] and "validation-required" in f["evidence"]


def test_a_node_on_another_driver_with_no_upgrade_under_way_fails():
    (f,) = check_upgrade(view("upgrade-done", driver="580.95.05"), "595.91.07")
    assert (
        f["evidence"] == "the node runs driver 580.95.05, the operator is set to 595.91.07, and no upgrade is under way"
    )


def test_a_node_passes_on_the_set_driver_its_precompiled_branch_or_when_held_by_the_skip_label():
    assert check_upgrade(view("upgrade-done"), "595.91.07") == []
    assert check_upgrade(view(None, driver="580.95.05"), "580") == []
    assert check_upgrade(view("upgrade-required", skip=True, driver="580.95.05"), "595.91.07") == []
    assert check_upgrade(view(None, driver="580.95.05"), None) == []


def test_the_driver_the_operator_is_set_to_comes_from_the_policy_or_the_matching_nvidia_driver():
    policy = {"driver": {"version": "595.91.07", "use_nvidia_driver_crd": False}}
    assert expected_driver({}, policy, []) == "595.91.07"
    assert expected_driver({}, {"driver": {"enabled": False, "version": "595.91.07"}}, []) is None
    crd = {"driver": {"use_nvidia_driver_crd": True}}
    drivers = [
        {"version": "580.95.05", "default": True, "node_selector": {}},
        {"version": "595.91.07", "default": False, "node_selector": {"pool": "h200"}},
    ]
    assert expected_driver({"pool": "h200"}, crd, drivers) == "595.91.07"
    assert expected_driver({"pool": "a100"}, crd, drivers) == "580.95.05"
    assert expected_driver({"pool": "a100"}, crd, drivers[1:]) is None
