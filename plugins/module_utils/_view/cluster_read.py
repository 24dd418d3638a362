# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The few paginated LISTs the cluster's GPU view is made of, and the view itself (``cluster_view``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import (
    find_names,
    list_drivers,
    list_policies,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    ViewOptions,
    cluster_view,
    gpu_cluster_view,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_lists import read_index
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import DRIVER
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.operand_pods import creating_pods

SANDBOX_FAILED = "reason=FailedCreatePodSandBox"


def read_lists(
    client, label_selector=None, operator_namespace=None, page_size=2000, dra_driver=DRIVER, cluster_policy=None
):
    """The raw objects: ``{kubernetes_version, nodes, pods, sandbox_events, cluster_policies, nvidia_drivers, dra,
    names}``
    (``dra`` a ``DraIndex``; a CRD that is not installed gives None; ``names`` the :class:`.OperatorNames` found
    from the ``operator_namespace`` and ``cluster_policy`` options, None: discover; ``pods`` those of its
    namespace; ``sandbox_events`` their FailedCreatePodSandBox events, None when no operand pod waits for its
    sandbox). ``client`` is a ``_clients.k8s.K8sClient``."""
    policies = list_policies(client, page_size)
    drivers = list_drivers(client, page_size)
    names = find_names(client, policies, drivers, operator_namespace, cluster_policy, page_size)
    pods = client.list_core("pods", namespace=names.namespace, page_size=page_size)
    return {
        "kubernetes_version": client.version(),
        "nodes": client.list_core("nodes", label_selector=label_selector, page_size=page_size),
        "pods": pods,
        # only while some operand waits in ContainerCreating: whether its sandbox is failing
        "sandbox_events": client.list_core(
            "events", namespace=names.namespace, field_selector=SANDBOX_FAILED, page_size=page_size
        )
        if creating_pods(pods)
        else None,
        "cluster_policies": policies,
        "nvidia_drivers": drivers,
        "dra": read_index(client, dra_driver, page_size=page_size),
        "names": names,
    }


def view_of(lists, label_selector=None, node_detail="all", quarantine_markers=()):
    """The ``cluster_view`` of :func:`read_lists`' objects, with ``kubernetes_version``, ``operator`` (the names
    used, :meth:`.OperatorNames.result`) and ``gpu_cluster`` (the GPUCluster in use, or None) (without a label selector
    only GPU nodes are kept: the LIST could not narrow them server-side); ``quarantine_markers`` as in
    ``cluster_view``."""
    options = ViewOptions(
        gpu_nodes_only=not label_selector,
        node_detail=node_detail,
        quarantine_markers=quarantine_markers,
        cluster_policy=name_of(lists["names"].policy) if lists["names"].policy else None,
    )
    result = cluster_view(lists, options)
    result["kubernetes_version"] = lists["kubernetes_version"]
    result["operator"] = lists["names"].result()
    result["gpu_cluster"] = gpu_cluster_view(lists["names"].gpu_cluster)
    return result
