#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_preflight_info
short_description: The cluster facts the GPU baseline checks need before a GPU Operator install or upgrade
version_added: 0.1.0
description:
  - Reads the Kubernetes version, every node (labels, taints, cordon, driver upgrade state, container runtime),
    NFD DaemonSets, whether the ServiceMonitor, NFD, ClusterPolicy and C(resource.k8s.io/v1) (DRA) APIs are
    served, the operator's RuntimeClass, the operator namespace's labels (PodSecurity) and the ClusterPolicy, and
    asks the API server with one SelfSubjectAccessReview per entry of O(permissions) whether the identity in use
    may do it.
  - "A fixed number of reads whatever the cluster size: C(/version), one paginated LIST of nodes, one LIST of
    DaemonSets across namespaces (label selector C(app.kubernetes.io/name=node-feature-discovery)), four API
    discovery GETs, one GET each for the RuntimeClass and the namespace, one LIST each of ClusterPolicies and
    NVIDIADrivers (and of the operator's pods when they are needed to find its namespace, see
    O(operator_namespace)); never one request per node."
  - Read-only; a SelfSubjectAccessReview only asks. Needs RBAC C(list) on nodes and daemonsets, C(get) on
    namespaces and runtimeclasses, C(list) on pods, clusterpolicies.nvidia.com and nvidiadrivers.nvidia.com and
    C(create) on selfsubjectaccessreviews (docs/rbac.yml).
  - The checks themselves are in the P(gpuops.gpu_operator.baseline_report#filter) filter and the
    C(gpuops.gpu_operator.gpu_baseline) role.
author:
  - gpuops.gpu_operator contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.kubeconfig
  - gpuops.gpu_operator.operator_names
  - gpuops.gpu_operator.attributes
  - gpuops.gpu_operator.attributes.INFO_MODULE
  - gpuops.gpu_operator.attributes.CLUSTER
options:
  sections:
    description:
      - What to read. V(access) runs the SelfSubjectAccessReviews for O(permissions).
      - Use O(sections=[access]) with another O(kubeconfig) to check a second identity (for example the one
        that installs the chart).
    type: list
    elements: str
    choices: [version, nodes, nfd, crds, runtime_class, namespace, cluster_policy, access]
    default: [version, nodes, nfd, crds, runtime_class, namespace, cluster_policy, access]
  runtime_class:
    description: Name of the RuntimeClass the operator manages (chart value C(operator.runtimeClass)).
    type: str
    default: nvidia
  permissions:
    description:
      - Permissions to check with SelfSubjectAccessReview. Each missing one is returned in RV(access).
    type: list
    elements: dict
    default: []
    suboptions:
      verb:
        description: API verb, for example V(create) or V(patch).
        type: str
        required: true
      resource:
        description: Resource plural, for example V(customresourcedefinitions).
        type: str
        required: true
      group:
        description: API group; empty for the core group.
        type: str
        default: ""
      namespace:
        description: Namespace for a namespaced permission; omit for cluster-wide.
        type: str
      subresource:
        description: Subresource, for example V(log) or V(eviction).
        type: str
      name:
        description: A single object's name.
        type: str
  identity:
    description: A label for the identity checked, used in RV(access) and in the baseline report.
    type: str
    default: automation
  page_size:
    description: Objects per LIST page.
    type: int
    default: 500
"""

EXAMPLES = r"""
- name: Read the cluster facts for the baseline
  gpuops.gpu_operator.gpu_preflight_info:
    kubeconfig: "{{ gpuops_kubeconfig }}"
    permissions:
      - {verb: patch, resource: nodes}
      - {verb: create, resource: pods, namespace: gpu-operator}
  register: preflight

- name: Check only what the chart-installing identity may do
  gpuops.gpu_operator.gpu_preflight_info:
    kubeconfig: "{{ gpuops_admin_kubeconfig }}"
    sections: [access]
    identity: installer
    permissions:
      - {verb: create, resource: customresourcedefinitions, group: apiextensions.k8s.io}
  register: preflight_installer
"""

RETURN = r"""
kubernetes_version:
  description: The API server's C(/version) - C(git_version), C(major), C(minor), C(platform).
  returned: when O(sections) has V(version)
  type: dict
  sample: {git_version: v1.36.3, major: "1", minor: "36", platform: linux/amd64}
nodes:
  description:
    - Every node by name - C(name), C(gpu) (a GPU node by the operator's labels or capacity), C(all_labels),
      C(taints), C(unschedulable), C(upgrade_state), C(kubelet_version), C(container_runtime_version), C(os_image).
  returned: when O(sections) has V(nodes)
  type: dict
nfd:
  description: C(daemonsets) (namespace and name of each NFD DaemonSet) and C(labelled_nodes) (nodes with NFD labels).
  returned: when O(sections) has V(nfd)
  type: dict
  sample: {daemonsets: [{namespace: node-feature-discovery, name: nfd-worker}], labelled_nodes: 6}
crds:
  description: Whether API discovery serves each of C(servicemonitors.monitoring.coreos.com),
    C(nodefeaturerules.nfd.k8s-sigs.io), C(clusterpolicies.nvidia.com) and C(resourceslices.resource.k8s.io) (the
    built-in C(resource.k8s.io/v1) API of Dynamic Resource Allocation, served from Kubernetes 1.34).
  returned: when O(sections) has V(crds)
  type: dict
  sample: {servicemonitors.monitoring.coreos.com: false}
runtime_class:
  description: C(name), C(exists) and C(handler) of the operator's RuntimeClass.
  returned: when O(sections) has V(runtime_class)
  type: dict
namespace:
  description: C(name), C(exists) and C(labels) of the operator namespace (O(operator_namespace), else discovered -
    before an install the conventional V(gpu-operator)).
  returned: when O(sections) has V(namespace)
  type: dict
cluster_policy:
  description: C(exists), C(name) and C(dcgm_exporter_enabled) (C(spec.dcgmExporter.enabled)) of the ClusterPolicy in
    use (O(cluster_policy), else the one the operator reconciles).
  returned: when O(sections) has V(cluster_policy)
  type: dict
operator:
  description: The operator's names this run used and how each was found, as M(gpuops.gpu_operator.gpu_cluster_info)
    returns them (C(mode), C(namespace), C(namespace_source), C(cluster_policy), C(gpu_cluster),
    C(nvidia_drivers), C(problems)).
  returned: when O(sections) has V(namespace) or V(cluster_policy)
  type: dict
access:
  description:
    - One entry for the identity checked - C(identity), C(checked) (permissions asked) and C(missing) (each denied
      permission with the API server's C(reason)).
  returned: when O(sections) has V(access)
  type: list
  elements: dict
  sample: [{identity: automation, checked: 2, missing: [{verb: patch, resource: nodes, group: "", reason: ""}]}]
api_requests:
  description: HTTP GETs made to the API server (access reviews not counted).
  returned: always
  type: int
"""


from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import (
    KUBERNETES,
    K8sError,
    module_client,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.preflight import (
    SECTIONS,
    PreflightOptions,
    gather,
)


def argspec():
    spec = dict(KUBECONFIG_ARG_SPEC, **OPERATOR_NAMES_ARG_SPEC)
    spec.update(
        sections=dict(type="list", elements="str", choices=list(SECTIONS), default=list(SECTIONS)),
        runtime_class=dict(type="str", default="nvidia"),
        permissions=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                verb=dict(type="str", required=True),
                resource=dict(type="str", required=True),
                group=dict(type="str", default=""),
                namespace=dict(type="str"),
                subresource=dict(type="str"),
                name=dict(type="str"),
            ),
        ),
        identity=dict(type="str", default="automation"),
        page_size=dict(type="int", default=500),
    )
    return spec


def reviewer(configuration):
    """A function posting one SelfSubjectAccessReview with the kubernetes client; returns its status."""
    from kubernetes import client as k8s_client

    api = k8s_client.AuthorizationV1Api(k8s_client.ApiClient(configuration))

    def review(body):
        try:
            status = api.create_self_subject_access_review(body).status
        except k8s_client.exceptions.ApiException as exc:
            raise K8sError(
                "SelfSubjectAccessReview failed: HTTP %s %s. Grant create on "
                "selfsubjectaccessreviews.authorization.k8s.io (docs/rbac.yml)." % (exc.status, exc.reason),
                exc.status,
            ) from exc
        return {"allowed": status.allowed, "reason": status.reason, "evaluationError": status.evaluation_error}

    return review


def execute_module(module):
    client = module_client(module)
    result = gather(client, PreflightOptions.from_params(module.params), review=reviewer(client.configuration))
    result["changed"] = False
    return result


def main():
    run_module(argspec(), execute_module, requirements=[KUBERNETES], supports_check_mode=True)


if __name__ == "__main__":
    main()
