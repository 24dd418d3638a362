# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: audit_cluster_results
short_description: The clusters of a fleet audit for the gpu_audit_report module, from the registered reads
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Takes the C(results) of a M(gpuops.gpu_operator.gpu_cluster_info) task that looped over the cluster names of
    P(gpuops.gpu_operator.audit_clusters#filter) (the loop variable is read from each result's C(ansible_loop_var))
    and keys each result by its cluster, without its C(invocation), with the cluster's connection for the record.
  - An inline kubeconfig (a dict) is recorded as V((inline)), never copied.
options:
  _input:
    description: The C(results) of the registered loop.
    type: list
    elements: dict
    required: true
  clusters:
    description: The clusters, the result of P(gpuops.gpu_operator.audit_clusters#filter).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the audit reports
  gpuops.gpu_operator.gpu_audit_report:
    dest: reports
    hosts: "{{ clusters | gpuops.gpu_operator.audit_hosts(hostvars) }}"
    clusters: "{{ cluster_info.results | gpuops.gpu_operator.audit_cluster_results(clusters) }}"
"""

RETURN = r"""
_value:
  description:
    - Clusters by name, each with C(result) (the registered result without C(invocation)), C(kubeconfig) (the
      path, V((inline)) or null) and C(context).
  type: dict
"""


def _recorded_kubeconfig(kubeconfig):
    if isinstance(kubeconfig, str):
        return kubeconfig
    return "(inline)" if kubeconfig else None


def audit_cluster_results(results, clusters):
    out = {}
    for r in results:
        name = r[r.get("ansible_loop_var", "item")]
        c = clusters[name]
        out[name] = {
            "result": {k: v for k, v in r.items() if k != "invocation"},
            "kubeconfig": _recorded_kubeconfig(c.get("kubeconfig")),
            "context": c.get("context"),
        }
    return out


class FilterModule(object):
    def filters(self):
        return {"audit_cluster_results": audit_cluster_results}
