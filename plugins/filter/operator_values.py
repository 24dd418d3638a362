# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: operator_values
short_description: GPU Operator values, node labels and taints from GPU host facts and inventory
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Reads, for each GPU host, the facts of M(gpuops.gpu_operator.gpu_host_facts) and
    M(gpuops.gpu_operator.nvidia_gpu_facts) and the inventory variables C(k8s_node_name), C(gpu_pool),
    C(gpu_driver_preinstalled), C(gpu_k8s_distribution), C(gpu_node_labels), C(gpu_node_taints), C(gpu_mig_config),
    plus the O(pools) definitions.
  - Decides C(driver.enabled) (false only when every GPU host has a preinstalled driver; in a mixed fleet the
    hosts with one get C(nvidia.com/gpu.deploy.driver=false)) and C(toolkit.env) for the detected distribution's
    containerd config and socket (k3s, RKE2, MicroK8s, k0s; nothing for kubeadm).
  - Collects the custom taints of GPU nodes, so that M(gpuops.gpu_operator.gpu_operator) adds their tolerations to
    the chart's C(daemonsets.tolerations) and NFD worker tolerations.
  - A host has a preinstalled driver when C(gpu_driver_preinstalled) says so, or when its kernel has the nvidia
    module loaded and NVML was not loaded from the operator's driver root C(/run/nvidia/driver).
  - The same plugin file provides C(gpuops.gpu_operator.mig_states) - applied to the nodes, with the MIG configs as
    its argument, it sorts the nodes with a wanted MIG layout into C(success), C(failed) and C(pending) by
    C(nvidia.com/mig.config.state).
options:
  hosts:
    description: The GPU hosts, for example C(groups['gpu_hosts']). Defaults to every key of the input.
    type: list
    elements: str
  pools:
    description:
      - Node pools by name, each a dictionary with C(labels) (dictionary), C(taints) (list of C(key), C(value),
        C(effect)) and C(mig_config) (a C(nvidia.com/mig.config) name such as V(all-1g.10gb)).
      - Host variables add to (labels, taints) or override (C(gpu_mig_config)) their pool's.
    type: dict
extends_documentation_fragment:
  - gpuops.gpu_operator.inventory_hosts.HOSTVARS
"""

EXAMPLES = r"""
- name: Synthesise values from the GPU hosts' facts
  ansible.builtin.set_fact:
    gpu_fleet: "{{ hostvars | gpuops.gpu_operator.operator_values(groups['gpu_hosts'], pools=gpu_pools) }}"

- name: Install with them (user values still win)
  gpuops.gpu_operator.gpu_operator:
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_ref: gpu-operator
    fleet: "{{ gpu_fleet }}"
"""

RETURN = r"""
_value:
  description:
    - C(values) (C(driver.enabled), C(toolkit.env)), C(taints) (distinct custom taints of GPU nodes),
      C(node_labels) (node -> labels to set, pool and host labels, C(nvidia.com/gpu.deploy.driver=false)),
      C(node_taints) (node -> taints), C(mig_configs) (node -> MIG config), C(driver_versions) (node -> the host's
      driver version from its facts, null when unknown; the GPUCluster mode gate reads them) and
      C(reasons) (one sentence per decision).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import (  # noqa: E402
    MIG_CONFIG_LABEL,
    MIG_STATE_LABEL,
    ValuesError,
    fleet_plan,
    hosts_from_hostvars,
)


def mig_states(nodes, mig_configs):
    """Nodes (Kubernetes objects) against the wanted ``{node: config}``: ``success``, ``failed`` and ``pending``
    lists of node names (pending: a different config, no state yet, ``pending`` or ``rebooting``, or missing)."""
    out = {"success": [], "failed": [], "pending": []}
    by_name = {name_of(n): labels_of(n) for n in nodes}
    for node, config in sorted((mig_configs or {}).items()):
        labels = by_name.get(node, {})
        state = labels.get(MIG_STATE_LABEL)
        if labels.get(MIG_CONFIG_LABEL) == config and state in ("success", "failed"):
            out[state].append(node)
        else:
            out["pending"].append(node)
    return out


def operator_values(hostvars, hosts=None, pools=None):
    names = list(hosts) if hosts is not None else list(hostvars)
    try:
        return fleet_plan(hosts_from_hostvars(hostvars, names), pools or {})
    except ValuesError as exc:
        raise AnsibleFilterError("operator_values: %s" % exc) from exc


class FilterModule(object):
    def filters(self):
        return {"operator_values": operator_values, "mig_states": mig_states}
