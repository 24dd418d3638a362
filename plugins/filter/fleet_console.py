# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_console
short_description: The console summary of a fleet validation - totals, then each failing node with a command to run
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Renders the result of P(gpuops.gpu_operator.fleet_summary#filter) for the console, as lines - the totals with the
    failing layers, the passing nodes by name, then per failing node (lowest failing layer first, at most O(limit))
    its layer, the evidence of that layer's findings in full, the fix, and the first command to paste (C(run:)),
    and the higher layers that fail too (often consequences); then each node someone else took out of service
    (C(QUARANTINED), its owners, evidence and fix - not a failure); then the report files.
  - "The command follows the failing layer and the node's operand pods in O(nodes): the logs of the layer's pod
    (driver, container-toolkit, device-plugin or gpu-feature-discovery for the labels, mig-manager, dcgm-exporter,
    dra-driver) - or C(kubectl describe pod) when that pod is still being created, so its events say why; C(kubectl
    get pods -o wide --field-selector spec.nodeName=<node>) when the layer's pod is missing; C(kubectl describe node)
    for node, gpu-health, scheduling and workload failures (C(kubectl get nodes -o wide) when the node does not
    exist); C(ssh <host> nvidia-smi) when NVML on the host sees no GPU."
options:
  _input:
    description: The result of P(gpuops.gpu_operator.fleet_summary#filter).
    type: dict
    required: true
  nodes:
    description: The C(nodes) of M(gpuops.gpu_operator.gpu_cluster_info) (the operand pods the commands name).
    type: dict
  namespace:
    description: Namespace of the GPU Operator's operand pods.
    type: str
    default: gpu-operator
  reports:
    description: Report files to name in the last line.
    type: list
    elements: str
  limit:
    description: Failing nodes shown at most; the rest are counted (the reports list every node).
    type: int
    default: 20
seealso:
  - plugin: gpuops.gpu_operator.fleet_summary
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ fleet | gpuops.gpu_operator.fleet_console(cluster.nodes, reports=['/srv/reports/gpu-validate.md']) }}"
"""

RETURN = r"""
_value:
  description: The lines.
  type: list
  elements: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.console import fleet_console  # noqa: E402


class FilterModule(object):
    def filters(self):
        return {"fleet_console": fleet_console}
