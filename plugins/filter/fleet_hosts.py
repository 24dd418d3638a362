# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_hosts
short_description: The GPU hosts of a fleet validation, each joined with its Kubernetes node name, read from hostvars
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Builds the input of P(gpuops.gpu_operator.fleet_summary#filter) from C(hostvars) - for each GPU host its
    Kubernetes node name and pool (from the host variables named by O(node_name_var) and O(pool_var)) and its
    M(gpuops.gpu_operator.nvidia_gpu_facts) facts.
  - A host without a node name variable is named after itself; a host without C(nvidia_gpu) facts gets facts
    that say so (C(available=false) with a C(reason) and a C(hint)), so that the driver check names it.
  - A host that is not in the inventory counts as a host without variables.
options:
  hosts:
    description: The GPU hosts, for example C(groups['gpu_hosts']).
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - gpuops.gpu_operator.inventory_hosts
  - gpuops.gpu_operator.inventory_hosts.HOSTVARS
"""

EXAMPLES = r"""
- name: Validate every GPU node
  ansible.builtin.set_fact:
    fleet: >-
      {{ hostvars | gpuops.gpu_operator.fleet_hosts(groups['gpu_hosts'])
         | gpuops.gpu_operator.fleet_summary(cluster.nodes) }}

- name: The Kubernetes node names of the canary hosts
  ansible.builtin.set_fact:
    canary_nodes: >-
      {{ (hostvars | gpuops.gpu_operator.fleet_hosts(groups['gpu_canary'])).values()
         | map(attribute='node_name') | list }}
"""

RETURN = r"""
_value:
  description:
    - Hosts by inventory name, in the order of O(hosts), each with C(node_name), C(pool) (null when the host has
      no such variable) and C(nvidia_gpu).
  type: dict
"""

NO_FACTS_HINT = "Run gpuops.gpu_operator.nvidia_gpu_facts on the GPU hosts before this role."


def fleet_hosts(hostvars, hosts, node_name_var="k8s_node_name", pool_var="gpu_pool"):
    out = {}
    for name in hosts:
        # not hostvars.get(): HostVars returns an undefined marker, not the default, for a host it does not know
        hv = hostvars[name] if name in hostvars else {}  # noqa: SIM401
        facts = hv.get("ansible_facts") or {}
        if "nvidia_gpu" in facts:
            nvidia_gpu = facts["nvidia_gpu"]
        else:
            nvidia_gpu = {"available": False, "reason": "no nvidia_gpu facts for %s" % name, "hint": NO_FACTS_HINT}
        out[name] = {"node_name": hv.get(node_name_var, name), "pool": hv.get(pool_var), "nvidia_gpu": nvidia_gpu}
    return out


class FilterModule(object):
    def filters(self):
        return {"fleet_hosts": fleet_hosts}
