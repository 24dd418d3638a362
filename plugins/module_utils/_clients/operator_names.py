# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The operator's names, found rather than assumed: the ClusterPolicy in use (or, without one, the GPUCluster), the
operator namespace and the NVIDIADriver objects (``gpu-cluster-policy`` in ``nvidia-gpu-operator`` on OpenShift,
``cluster-policy`` in ``gpu-operator`` from the Helm chart, or anything else), and so the operator's mode:
``clusterpolicy``, ``nvidiadriver`` (a ClusterPolicy that takes the driver from NVIDIADriver objects) or
``gpucluster`` (26.7+: the GPUCluster CR and the DRA driver; a ClusterPolicy and a GPUCluster cannot coexist).

The ClusterPolicy in use follows the operator: it reconciles the oldest and marks the others ``ignored``, so a
policy that is not ignored comes first, then the oldest ``creationTimestamp``, then the name. The namespace comes
from the ``operator_namespace`` option, else the ClusterPolicy's ``status.namespace``, else the namespace of the
operator's own pods (one cluster-wide LIST by label), else an NVIDIADriver's ``status.namespace``, else the
conventional ``gpu-operator`` with a problem saying it was not found.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    labels_of,
    meta_of,
    name_of,
    namespace_of,
)

DEFAULT_NAMESPACE = "gpu-operator"
#: The label of the operator Deployment's pods, in the Helm chart and in the OLM bundle alike.
OPERATOR_POD_LABEL = ("app.kubernetes.io/component", "gpu-operator")
OPERATOR_POD_SELECTOR = "%s=%s" % OPERATOR_POD_LABEL


def _status(obj):
    return (obj or {}).get("status") or {}


def is_operator_pod(pod):
    """Whether ``pod`` is one of the operator's own (:data:`OPERATOR_POD_LABEL`)."""
    return labels_of(pod).get(OPERATOR_POD_LABEL[0]) == OPERATOR_POD_LABEL[1]


def cluster_policy_in_use(policies, name=None):
    """The ClusterPolicy the operator acts on (raw dict), or None when there is none. With ``name`` (the
    ``cluster_policy`` option) the one of that name; none of that name is an :class:`ArgumentError`."""
    policies = policies or []
    if name:
        for policy in policies:
            if name_of(policy) == name:
                return policy
        raise ArgumentError(
            "cluster_policy %s matches no ClusterPolicy (found: %s); give the name `kubectl get clusterpolicies` "
            "shows, or leave cluster_policy unset to use the one the operator reconciles"
            % (name, ", ".join(sorted(name_of(p) for p in policies)) or "none")
        )
    if not policies:
        return None
    return min(
        policies,
        key=lambda p: (_status(p).get("state") == "ignored", meta_of(p).get("creationTimestamp") or "", name_of(p)),
    )


def gpu_cluster_in_use(clusters):
    """The GPUCluster the operator acts on (raw dict; the oldest, then by name), or None when there is none."""
    if not clusters:
        return None
    return min(clusters, key=lambda c: (meta_of(c).get("creationTimestamp") or "", name_of(c)))


class OperatorNames:
    """The names one module run uses: ``namespace`` and ``namespace_source`` (``option``, ``cluster_policy``,
    ``operator_pods``, ``nvidia_driver`` or ``default``), ``policy`` (the raw ClusterPolicy in use, or None),
    ``gpu_cluster`` (the raw GPUCluster in use when there is no ClusterPolicy, or None), ``drivers`` (the raw
    NVIDIADrivers) and ``problems`` (sentences)."""

    def __init__(self, namespace, namespace_source, policy, drivers, problems, gpu_cluster=None):
        self.namespace = namespace
        self.namespace_source = namespace_source
        self.policy = policy
        self.gpu_cluster = gpu_cluster
        self.drivers = drivers or []
        self.problems = problems

    @property
    def mode(self):
        """``clusterpolicy``, ``nvidiadriver``, ``gpucluster`` or None (no operator object found)."""
        if self.policy:
            driver = (self.policy.get("spec") or {}).get("driver") or {}
            return "nvidiadriver" if driver.get("useNvidiaDriverCRD") else "clusterpolicy"
        return "gpucluster" if self.gpu_cluster else None

    def result(self):
        """The module return value ``operator``."""
        return {
            "mode": self.mode,
            "namespace": self.namespace,
            "namespace_source": self.namespace_source,
            "cluster_policy": name_of(self.policy) if self.policy else None,
            "gpu_cluster": name_of(self.gpu_cluster) if self.gpu_cluster else None,
            "nvidia_drivers": sorted(name_of(d) for d in self.drivers),
            "problems": list(self.problems),
        }


def operator_object_text(operator):
    """The object the operator acts on, named with its mode, from :meth:`OperatorNames.result`: ``ClusterPolicy
    cluster-policy``, ``ClusterPolicy cp with the driver from NVIDIADrivers a, b``, ``GPUCluster gpu-cluster``."""
    drivers = ", ".join(operator.get("nvidia_drivers") or []) or "none"
    mode = operator.get("mode")
    if mode == "gpucluster":
        return "GPUCluster %s (NVIDIADrivers: %s)" % (operator["gpu_cluster"], drivers)
    if mode == "nvidiadriver":
        return "ClusterPolicy %s with the driver from NVIDIADrivers: %s" % (operator["cluster_policy"], drivers)
    if mode == "clusterpolicy":
        return "ClusterPolicy %s" % operator["cluster_policy"]
    return "no ClusterPolicy or GPUCluster"


def _pod_namespace(client, page_size):
    """The namespace of the operator's own pods (the most pods, then the name), or None (none, or no RBAC to list
    pods in every namespace); one LIST."""
    try:
        pods = client.list_core("pods", label_selector=OPERATOR_POD_SELECTOR, page_size=page_size)
    except K8sError as exc:
        if exc.status == 403:
            return None
        raise
    counts = {}
    for pod in pods:
        counts[namespace_of(pod)] = counts.get(namespace_of(pod), 0) + 1
    return min(counts, key=lambda ns: (-counts[ns], ns)) if counts else None


def _found_namespace(client, policy, drivers, page_size):
    """``(namespace, source)`` without the option."""
    if _status(policy).get("namespace"):
        return _status(policy)["namespace"], "cluster_policy"
    namespace = _pod_namespace(client, page_size)
    if namespace:
        return namespace, "operator_pods"
    for driver in sorted(drivers, key=name_of):
        if _status(driver).get("namespace"):
            return _status(driver)["namespace"], "nvidia_driver"
    return DEFAULT_NAMESPACE, "default"


def find_names(client, policies, drivers, namespace=None, cluster_policy=None, page_size=2000):
    """The :class:`OperatorNames` from the ClusterPolicies and NVIDIADrivers already listed (None: the CRD is not
    installed) and the ``operator_namespace`` and ``cluster_policy`` options (None: discover). At most two requests:
    the GPUClusters' LIST when no ClusterPolicy is in use, and the operator pods' LIST when neither the option nor
    the ClusterPolicy's status names the namespace."""
    policy = cluster_policy_in_use(policies, cluster_policy)
    gpu_cluster = None if policy else gpu_cluster_in_use(list_gpu_clusters(client, page_size))
    drivers = drivers or []
    problems = []
    if namespace:
        source = "option"
        reported = _status(policy).get("namespace")
        if reported and reported != namespace:
            problems.append(
                "operator_namespace is %s but ClusterPolicy %s reports the operator in %s; leave operator_namespace "
                "unset to use the one the operator reports" % (namespace, name_of(policy), reported)
            )
    else:
        namespace, source = _found_namespace(client, policy, drivers, page_size)
        if source == "default":
            problems.append(
                "the operator namespace was not found (no ClusterPolicy status, no pod labelled %s, no NVIDIADriver "
                "status); using %s - set operator_namespace if the operator runs elsewhere"
                % (OPERATOR_POD_SELECTOR, DEFAULT_NAMESPACE)
            )
    return OperatorNames(namespace, source, policy, drivers, problems, gpu_cluster)


def list_policies(client, page_size=2000):
    """The ClusterPolicies (None when the CRD is not installed)."""
    return client.list_custom("nvidia.com", "v1", "clusterpolicies", page_size=page_size)


def list_gpu_clusters(client, page_size=2000):
    """The GPUClusters (None when the CRD is not installed: an operator before 26.7)."""
    return client.list_custom("nvidia.com", "v1alpha1", "gpuclusters", page_size=page_size)


def list_drivers(client, page_size=2000):
    """The NVIDIADrivers (None when the CRD is not installed)."""
    return client.list_custom("nvidia.com", "v1alpha1", "nvidiadrivers", page_size=page_size)


def discover(client, namespace=None, cluster_policy=None, page_size=2000):
    """:func:`find_names` after listing the ClusterPolicies and NVIDIADrivers (two or three requests)."""
    return find_names(
        client, list_policies(client, page_size), list_drivers(client, page_size), namespace, cluster_policy, page_size
    )
