# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: audit_clusters
short_description: The clusters of a fleet audit - each cluster's audited hosts and its connection, from the inventory
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - A cluster is an inventory group (O(cluster_groups)); its hosts are its members that are in O(host_group).
    Without O(cluster_groups) there is one cluster, O(default_cluster), holding every host of O(host_group).
  - "A cluster's connection is read from the variables of its first host (so from the cluster group's variables):
    the kubeconfig from C(gpu_audit_kubeconfig), else C(gpuops_kubeconfig), else O(kubeconfig); the context from
    C(gpu_audit_context), else O(context); the operator namespace from C(gpu_audit_operator_namespace), else
    O(operator_namespace)."
  - Fails naming them when a group of O(cluster_groups) is not an inventory group or a host is in more than one
    cluster group.
  - The C(gpuops.gpu_operator.gpu_audit) role uses it; P(gpuops.gpu_operator.audit_hosts#filter) and
    P(gpuops.gpu_operator.audit_cluster_results#filter) take its result.
options:
  _input:
    description: C(hostvars), or any mapping of inventory host name to its variables.
    type: dict
    required: true
  groups:
    description: The inventory groups, C(groups).
    type: dict
    required: true
  host_group:
    description: The inventory group of the audited GPU hosts.
    type: str
    default: gpu_hosts
  cluster_groups:
    description: The inventory groups, one per cluster; empty for one cluster, O(default_cluster).
    type: list
    elements: str
    default: []
  default_cluster:
    description: The name of the single cluster when O(cluster_groups) is empty.
    type: str
    default: default
  kubeconfig:
    description:
      - The kubeconfig (path or dict) of a cluster whose hosts set neither C(gpu_audit_kubeconfig) nor
        C(gpuops_kubeconfig).
    type: raw
  context:
    description: The kubeconfig context of a cluster whose hosts set no C(gpu_audit_context).
    type: str
  operator_namespace:
    description:
      - The GPU Operator namespace of a cluster whose hosts set no C(gpu_audit_operator_namespace).
      - Unset (null) for M(gpuops.gpu_operator.gpu_cluster_info) to discover it.
    type: str
"""

EXAMPLES = r"""
- name: Map each cluster to its audited hosts and its connection
  ansible.builtin.set_fact:
    clusters: "{{ hostvars | gpuops.gpu_operator.audit_clusters(groups, cluster_groups=['east', 'west']) }}"
  # {"east": {"hosts": ["east-gpu-0"], "kubeconfig": "east.kubeconfig", "context": null,
  #           "operator_namespace": null}, "west": {...}}  (null: discovered by gpu_cluster_info)
"""

RETURN = r"""
_value:
  description:
    - Clusters by name, in the order of O(cluster_groups), each with C(hosts) (inventory names), C(kubeconfig),
      C(context) and C(operator_namespace).
  type: dict
"""

from collections import namedtuple  # noqa: E402

from ansible.errors import AnsibleFilterError  # noqa: E402


def _members(groups, host_group, cluster_groups, default_cluster):
    audited = list(groups.get(host_group) or [])
    if not cluster_groups:
        return {default_cluster: audited}
    return {g: [h for h in groups.get(g) or [] if h in audited] for g in cluster_groups}


def _check(groups, cluster_groups, members):
    missing = [g for g in cluster_groups if g not in groups]
    every = [h for hosts in members.values() for h in hosts]
    twice = [h for h in sorted(set(every), key=every.index) if every.count(h) > 1]
    if missing or twice:
        raise AnsibleFilterError(
            "Not inventory groups: %s. In more than one cluster group: %s. Each cluster is one inventory group "
            "(gpu_audit_cluster_groups); put every GPU host in exactly one." % (missing, twice)
        )


#: The connection of a cluster whose hosts set none of their own (the filter's options of the same names).
Connection = namedtuple("Connection", "kubeconfig context operator_namespace", defaults=(None, None, None))


def audit_clusters(
    hostvars, groups, host_group="gpu_hosts", cluster_groups=None, default_cluster="default", **connection
):
    """``connection``: the options ``kubeconfig``, ``context`` and ``operator_namespace`` (see :data:`Connection`)."""
    fallback = Connection(**connection)
    cluster_groups = list(cluster_groups or [])
    members = _members(groups, host_group, cluster_groups, default_cluster)
    _check(groups, cluster_groups, members)
    out = {}
    for name, hosts in members.items():
        hv = hostvars[hosts[0]] if hosts else {}
        out[name] = {
            "hosts": hosts,
            "kubeconfig": hv.get("gpu_audit_kubeconfig", hv.get("gpuops_kubeconfig", fallback.kubeconfig)),
            "context": hv.get("gpu_audit_context", fallback.context),
            "operator_namespace": hv.get("gpu_audit_operator_namespace", fallback.operator_namespace),
        }
    return out


class FilterModule(object):
    def filters(self):
        return {"audit_clusters": audit_clusters}
