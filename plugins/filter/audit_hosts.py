# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: audit_hosts
short_description: The hosts of a fleet audit for the gpu_audit_report module, read from hostvars
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - For every host of every cluster of P(gpuops.gpu_operator.audit_clusters#filter), its cluster, its Kubernetes
    node name and pool (from the host variables named by O(node_name_var) and O(pool_var)) and the results its
    fact tasks registered (in the host variables named by O(host_facts_var) and O(nvml_var)).
  - A host without a node name variable is named after itself; a missing pool or result is null.
options:
  _input:
    description: The clusters, the result of P(gpuops.gpu_operator.audit_clusters#filter).
    type: dict
    required: true
  hostvars:
    description: C(hostvars), or any mapping of inventory host name to its variables.
    type: dict
    required: true
  host_facts_var:
    description: The host variable the M(gpuops.gpu_operator.gpu_host_facts) task registered.
    type: str
    default: __gpu_audit_host_facts_result
  nvml_var:
    description: The host variable the M(gpuops.gpu_operator.nvidia_gpu_facts) task registered.
    type: str
    default: __gpu_audit_nvml_result
extends_documentation_fragment:
  - gpuops.gpu_operator.inventory_hosts
"""

EXAMPLES = r"""
- name: Write the audit reports
  gpuops.gpu_operator.gpu_audit_report:
    dest: reports
    hosts: "{{ clusters | gpuops.gpu_operator.audit_hosts(hostvars, host_facts_var='host_facts', nvml_var='nvml') }}"
    clusters: "{{ cluster_info.results | gpuops.gpu_operator.audit_cluster_results(clusters) }}"
"""

RETURN = r"""
_value:
  description:
    - Hosts by inventory name, each with C(cluster), C(node_name), C(pool), C(host_facts_result) and C(nvml_result).
  type: dict
"""


def audit_hosts(
    clusters,
    hostvars,
    node_name_var="k8s_node_name",
    pool_var="gpu_pool",
    host_facts_var="__gpu_audit_host_facts_result",
    nvml_var="__gpu_audit_nvml_result",
):
    out = {}
    for cluster, c in clusters.items():
        for name in c["hosts"]:
            hv = hostvars[name]
            out[name] = {
                "cluster": cluster,
                "node_name": hv.get(node_name_var, name),
                "pool": hv.get(pool_var),
                "host_facts_result": hv.get(host_facts_var),
                "nvml_result": hv.get(nvml_var),
            }
    return out


class FilterModule(object):
    def filters(self):
        return {"audit_hosts": audit_hosts}
