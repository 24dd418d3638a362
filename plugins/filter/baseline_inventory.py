# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_inventory
short_description: The GPU hosts of the baseline report, read from hostvars
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Builds the input of P(gpuops.gpu_operator.baseline_report#filter) from C(hostvars) - for each GPU host its
    node name and pool (from the host variables named by O(node_name_var) and O(pool_var)), its
    M(gpuops.gpu_operator.gpu_host_facts) and M(gpuops.gpu_operator.nvidia_gpu_facts) facts, the labels and
    taints its node is to carry, and its own result C(gpu_baseline_host_result) from the role's host part.
  - A host's own C(gpu_baseline_gpu_node_labels) and C(gpu_baseline_gpu_node_taints) win over O(gpu_node_labels)
    and O(gpu_node_taints).
options:
  hosts:
    description: The GPU hosts, for example C(groups['gpu_hosts']).
    type: list
    elements: str
    required: true
  gpu_node_labels:
    description: The labels GPU nodes carry, for hosts without their own C(gpu_baseline_gpu_node_labels).
    type: dict
    default: {}
  gpu_node_taints:
    description: The taints GPU nodes carry, for hosts without their own C(gpu_baseline_gpu_node_taints).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - gpuops.gpu_operator.inventory_hosts
  - gpuops.gpu_operator.inventory_hosts.HOSTVARS
"""

EXAMPLES = r"""
- name: Build the report over the GPU hosts
  ansible.builtin.set_fact:
    report: >-
      {{ hostvars | gpuops.gpu_operator.baseline_inventory(groups['gpu_hosts'])
         | gpuops.gpu_operator.baseline_report(preflight, {'operator_version': 'v26.7.0'}) }}
"""

RETURN = r"""
_value:
  description:
    - Hosts by inventory name, each with C(node_name), C(pool), C(gpu_host), C(nvidia_gpu), C(gpu_node_labels),
      C(gpu_node_taints) and C(baseline) (the host's own result, or null).
  type: dict
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.report import (  # noqa: E402
    report_hosts,
)


def baseline_inventory(
    hostvars, hosts, node_name_var="k8s_node_name", pool_var="gpu_pool", gpu_node_labels=None, gpu_node_taints=None
):
    labels = {} if gpu_node_labels is None else gpu_node_labels
    taints = [] if gpu_node_taints is None else gpu_node_taints
    return report_hosts(hostvars, hosts, node_name_var, pool_var, labels, taints)


class FilterModule(object):
    def filters(self):
        return {"baseline_inventory": baseline_inventory}
