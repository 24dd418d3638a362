# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_summary
short_description: Join GPU host facts with the cluster's GPU view and give each node a verdict
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Joins each host's M(gpuops.gpu_operator.nvidia_gpu_facts) facts with the node that
    M(gpuops.gpu_operator.gpu_cluster_info) reports, and names the first failing layer in dependency order
    (C(driver), C(node), C(toolkit), C(device-plugin), C(gpu-health)) with evidence and a fix.
options:
  _input:
    description:
      - Hosts keyed by inventory name, each with C(node_name), C(pool) and C(nvidia_gpu) (the facts).
    type: dict
    required: true
  nodes:
    description: The C(nodes) result of M(gpuops.gpu_operator.gpu_cluster_info).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Summarise the fleet
  ansible.builtin.set_fact:
    fleet: "{{ gpu_hosts_facts | gpuops.gpu_operator.fleet_summary(cluster.nodes) }}"
"""

RETURN = r"""
_value:
  description:
    - C(rows) (one per host - C(host), C(node), C(pool), C(nvml_gpus), C(driver_version), C(health),
      C(allocatable), C(product), C(verdict) (V(pass) or V(fail)), C(failing_layer), C(findings)),
      C(passed), C(failed) and C(lines) (a plain-text table).
  type: dict
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._fleet import fleet_summary, summary_lines  # noqa: E402


def _fleet_summary(hosts, nodes):
    summary = fleet_summary(hosts, nodes)
    summary["lines"] = summary_lines(summary)
    return summary


class FilterModule(object):
    def filters(self):
        return {"fleet_summary": _fleet_summary}
