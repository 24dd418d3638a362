# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: admission_plan
short_description: Decide which validated GPU nodes the admission gate holds, admits or leaves alone
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - From the verdict of each validated node (the result of P(gpuops.gpu_operator.fleet_summary#filter)) and the
    cluster's view of its taints (M(gpuops.gpu_operator.gpu_cluster_info)), decides per node - V(hold) (not passed,
    without the admission taint - add it), V(held) (not passed, tainted), V(admit) (passed every layer, tainted -
    remove the taint), V(admitted) (passed, untainted) or V(left_alone) (cordoned, or carrying a C(NoSchedule) or
    C(NoExecute) taint that is neither the admission taint nor one of O(known_taints) - someone else holds it; it is
    never admitted or held, its record is not written, and the reason is given).
  - Each node that is not left alone gets an admission record, written as a compact JSON annotation only when it
    changed - C(v) (1), C(state) (V(held) or V(admitted)), C(layer) and C(evidence) (the failing layer and its first
    evidence), C(driver) (C(strategy) - V(operator) or V(preinstalled) - and C(version)), C(runtime) (C(toolkit) -
    V(operator) or V(host) -, C(mode), how GPUs reach pods, C(injection) - the summary's C(toolkit_mode),
    V(runtime-handler) or V(nri-plugin) - and C(cdi), whether the ClusterPolicy enables CDI), C(checked) (the GPU
    labels checked and the node's known taints) and C(passed) (the date of the last pass, kept while the node fails).
  - The C(gpuops.gpu_operator.gpu_validate) role uses it with C(gpu_validate_admission).
options:
  _input:
    description: The result of P(gpuops.gpu_operator.fleet_summary#filter).
    type: dict
    required: true
  nodes:
    description: The C(nodes) result of M(gpuops.gpu_operator.gpu_cluster_info) (taints, unschedulable, operands).
    type: dict
    required: true
  node_objects:
    description: The Node objects (C(kubernetes.core.k8s_info)'s C(resources)), read for the current records.
    type: list
    elements: dict
  taint_key:
    description: The admission taint's key (effect C(NoSchedule)).
    type: str
    default: gpuops.io/unvalidated
  annotation:
    description: The annotation that holds the admission record.
    type: str
    default: gpuops.io/admission
  today:
    description: The date a pass records, for example V(2026-12-05).
    type: str
  known_taints:
    description: Taint keys that belong to GPU nodes and do not mean someone else holds the node.
    type: list
    elements: str
    default: [nvidia.com/gpu]
  cluster_policy:
    description:
      - The C(cluster_policy) result of M(gpuops.gpu_operator.gpu_cluster_info); its C(cdi.enabled) is recorded as
        C(runtime.cdi) (null when unknown).
    type: dict
seealso:
  - plugin: gpuops.gpu_operator.fleet_summary
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Decide the admission of each validated node
  ansible.builtin.set_fact:
    admission: >-
      {{ fleet | gpuops.gpu_operator.admission_plan(cluster.nodes, node_objects=node_list.resources,
           today=now(utc=true).strftime('%Y-%m-%d')) }}

- name: Hold the nodes that have not passed
  kubernetes.core.k8s_taint:
    state: present
    name: "{{ item }}"
    taints: [{key: gpuops.io/unvalidated, effect: NoSchedule}]
  loop: "{{ admission.taint }}"
"""

RETURN = r"""
_value:
  description:
    - C(taint_key); C(nodes) (node name to C(action), C(reason), C(layer) and C(record)); C(taint) and C(untaint) (the
      nodes whose taint changes); C(annotate) (node name to the record's text, only the records that change);
      C(counts) (nodes per action); C(lines) (what the gate does, one line per node not plainly admitted); C(report)
      (what the validation report carries - C(taint_key), C(counts) per state and C(nodes), each with C(state)
      V(held), V(admitted) or V(left_alone), where the run leaves it, C(reason), C(layer) and C(record) - so that
      the next run, finding the nodes there, writes the same report).
  type: dict
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.admission import (  # noqa: E402
    GateOptions,
    gate_plan,
)


def _admission_plan(summary, nodes, node_objects=None, cluster_policy=None, **options):
    """``options``: those of :class:`GateOptions` (``taint_key``, ``annotation``, ``today``, ``known_taints``)."""
    return gate_plan(summary, nodes, node_objects, cluster_policy, GateOptions(**options))


class FilterModule(object):
    def filters(self):
        return {"admission_plan": _admission_plan}
