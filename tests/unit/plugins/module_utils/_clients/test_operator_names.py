"""Specification of plugins/module_utils/_clients/operator_names.py: the operator's names are found, not assumed."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import (
    OPERATOR_POD_SELECTOR,
    cluster_policy_in_use,
    discover,
    find_names,
    operator_object_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError, GpuOpsError


class StubClient:
    """Serves the ClusterPolicy, NVIDIADriver and pod LISTs from lists and records every request."""

    def __init__(self, policies=(), drivers=(), operator_pods=(), pods_status=None, gpu_clusters=None):
        self.policies, self.drivers, self.operator_pods = list(policies), list(drivers), list(operator_pods)
        self.gpu_clusters = gpu_clusters  # None: the CRD is not installed (an operator before 26.7)
        self.pods_status = pods_status
        self.calls = []

    def list_custom(self, group, version, plural, **kwargs):
        self.calls.append(plural)
        return {"clusterpolicies": self.policies, "nvidiadrivers": self.drivers, "gpuclusters": self.gpu_clusters}[
            plural
        ]

    def list_core(self, resource, namespace=None, label_selector=None, **kwargs):
        self.calls.append((resource, namespace, label_selector))
        if self.pods_status:
            raise K8sError("forbidden", status=self.pods_status)
        return self.operator_pods


def cp(name, created="2026-01-01T00:00:00Z", state="ready", namespace=None):
    status = {"state": state}
    if namespace:
        status["namespace"] = namespace
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": status}


def pod(namespace, name="gpu-operator-7d9f"):
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/component": "gpu-operator"}}
    }


def nvd(name, namespace=None):
    return {"metadata": {"name": name}, "status": {"namespace": namespace} if namespace else {}}


class TestTheClusterPolicyInUse:
    def test_is_the_one_the_operator_did_not_ignore(self):
        chosen = cluster_policy_in_use([cp("a-old", "2025-01-01T00:00:00Z", "ignored"), cp("gpu-cluster-policy")])
        assert chosen["metadata"]["name"] == "gpu-cluster-policy"

    def test_is_the_oldest_of_those_not_ignored_whatever_the_names(self):
        chosen = cluster_policy_in_use([cp("a-new", "2026-02-01T00:00:00Z"), cp("z-old", "2026-01-01T00:00:00Z")])
        assert chosen["metadata"]["name"] == "z-old"

    def test_falls_back_to_the_name_when_the_timestamps_are_equal(self):
        assert cluster_policy_in_use([cp("b"), cp("a")])["metadata"]["name"] == "a"

    def test_is_none_without_policies_or_the_crd(self):
        assert cluster_policy_in_use([]) is None and cluster_policy_in_use(None) is None

    def test_is_the_named_one_when_the_cluster_policy_option_names_it_even_if_ignored(self):
        chosen = cluster_policy_in_use([cp("in-use"), cp("spare", state="ignored")], "spare")
        assert chosen["metadata"]["name"] == "spare"

    def test_a_name_that_matches_nothing_fails_naming_the_option_the_names_found_and_the_fix(self):
        with pytest.raises(ArgumentError) as err:
            cluster_policy_in_use([cp("gpu-cluster-policy")], "cluster-policy")
        assert isinstance(err.value, GpuOpsError)
        assert "cluster_policy cluster-policy matches no ClusterPolicy (found: gpu-cluster-policy)" in err.value.msg
        assert "leave cluster_policy unset" in err.value.msg

    def test_a_name_without_any_clusterpolicy_fails_too(self):
        with pytest.raises(ArgumentError, match=r"found: none"):
            cluster_policy_in_use(None, "gpu-cluster-policy")


class TestTheOperatorNamespace:
    def test_the_option_wins_and_costs_no_request(self):
        client = StubClient()
        names = find_names(client, [cp("cp", namespace="nvidia-gpu-operator")], [], "nvidia-gpu-operator")
        assert (names.namespace, names.namespace_source, names.problems) == ("nvidia-gpu-operator", "option", [])
        assert client.calls == []

    def test_an_option_that_differs_from_the_clusterpolicy_is_used_with_a_problem(self):
        names = find_names(StubClient(), [cp("cp", namespace="nvidia-gpu-operator")], [], "gpu-operator")
        assert names.namespace == "gpu-operator"
        assert names.problems == [
            "operator_namespace is gpu-operator but ClusterPolicy cp reports the operator in nvidia-gpu-operator; "
            "leave operator_namespace unset to use the one the operator reports"
        ]

    def test_else_the_clusterpolicy_status_names_it_without_a_request(self):
        client = StubClient(operator_pods=[pod("elsewhere")])
        names = find_names(client, [cp("gpu-cluster-policy", namespace="nvidia-gpu-operator")], [])
        assert (names.namespace, names.namespace_source) == ("nvidia-gpu-operator", "cluster_policy")
        assert client.calls == []

    def test_else_the_operator_pods_found_by_label_in_every_namespace_with_one_list(self):
        client = StubClient(operator_pods=[pod("nvidia-gpu-operator")], drivers=[nvd("d", "other")])
        names = find_names(client, [cp("cp")], client.drivers)
        assert (names.namespace, names.namespace_source) == ("nvidia-gpu-operator", "operator_pods")
        assert client.calls == [("pods", None, OPERATOR_POD_SELECTOR)]

    def test_else_an_nvidiadriver_status(self):
        names = find_names(StubClient(), None, [nvd("b"), nvd("a", "nvidia-gpu-operator")])
        assert (names.namespace, names.namespace_source) == ("nvidia-gpu-operator", "nvidia_driver")

    def test_without_rbac_to_list_pods_everywhere_the_next_source_answers(self):
        names = find_names(StubClient(pods_status=403), [], [nvd("a", "nvidia-gpu-operator")])
        assert names.namespace_source == "nvidia_driver"

    def test_other_errors_of_the_pod_list_are_not_hidden(self):
        with pytest.raises(K8sError):
            find_names(StubClient(pods_status=500), [], [])

    def test_else_the_conventional_namespace_with_a_problem_saying_it_was_not_found(self):
        names = find_names(StubClient(), None, None)
        assert (names.namespace, names.namespace_source) == ("gpu-operator", "default")
        assert "the operator namespace was not found" in names.problems[0]
        assert "set operator_namespace" in names.problems[0]


def test_discover_lists_the_policies_and_drivers_and_returns_every_name_and_how_it_was_found():
    client = StubClient(
        policies=[cp("gpu-cluster-policy", namespace="nvidia-gpu-operator")],
        drivers=[nvd("gpu-b"), nvd("gpu-a")],
    )
    names = discover(client)
    assert client.calls == ["clusterpolicies", "nvidiadrivers"]
    assert names.policy["metadata"]["name"] == "gpu-cluster-policy"
    assert names.result() == {
        "mode": "clusterpolicy",
        "namespace": "nvidia-gpu-operator",
        "namespace_source": "cluster_policy",
        "cluster_policy": "gpu-cluster-policy",
        "gpu_cluster": None,
        "nvidia_drivers": ["gpu-a", "gpu-b"],
        "problems": [],
    }


class TestTheOperatorsMode:
    """Named from the object the operator acts on; the GPUClusters are listed only when no ClusterPolicy is in use
    (the two cannot coexist)."""

    def test_a_clusterpolicy_that_takes_its_driver_from_nvidiadrivers_is_nvidiadriver_mode(self):
        policy = dict(cp("cluster-policy", namespace="gpu-operator"), spec={"driver": {"useNvidiaDriverCRD": True}})
        client = StubClient(gpu_clusters=[cp("gpu-cluster")])
        names = find_names(client, [policy], [nvd("default")])
        assert (names.mode, names.result()["gpu_cluster"]) == ("nvidiadriver", None)
        assert "gpuclusters" not in client.calls

    def test_without_a_clusterpolicy_the_oldest_gpucluster_is_gpucluster_mode(self):
        client = StubClient(
            operator_pods=[pod("gpu-operator")], gpu_clusters=[cp("b", "2026-02-01T00:00:00Z"), cp("a")]
        )
        names = find_names(client, [], [nvd("default")])
        assert (names.mode, names.result()["gpu_cluster"], names.result()["cluster_policy"]) == (
            "gpucluster",
            "a",
            None,
        )

    def test_neither_object_nor_the_gpucluster_crd_is_no_mode(self):
        assert find_names(StubClient(operator_pods=[pod("gpu-operator")]), None, None).mode is None


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        ("clusterpolicy", "ClusterPolicy cluster-policy"),
        ("nvidiadriver", "ClusterPolicy cluster-policy with the driver from NVIDIADrivers: a, b"),
        ("gpucluster", "GPUCluster gpu-cluster (NVIDIADrivers: a, b)"),
        (None, "no ClusterPolicy or GPUCluster"),
    ],
)
def test_the_console_names_the_object_the_operator_acts_on_with_its_mode(mode, text):
    operator = {
        "mode": mode,
        "cluster_policy": "cluster-policy",
        "gpu_cluster": "gpu-cluster",
        "nvidia_drivers": ["a", "b"],
    }
    assert operator_object_text(operator) == text
