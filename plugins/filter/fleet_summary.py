# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_summary
short_description: Validate every GPU node and name the failing layer, from host facts and the cluster's view
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Joins each host's M(gpuops.gpu_operator.nvidia_gpu_facts) facts with the node that
    M(gpuops.gpu_operator.gpu_cluster_info) reports and, when given, the node's
    M(gpuops.gpu_operator.gpu_smoke_test) result and its monitoring data, and runs the checks in order - host NVML,
    node Ready, GPU labels, allocatable against the NVML GPU count, operand pods, MIG, smoke pod, monitoring.
  - A node whose GPUs reach pods through DRA (its C(mode) V(dra), or V(both)) is checked, after its operand pods,
    for its DRA kubelet plugin pod, its ResourceSlices (published, complete, of one generation), its published GPUs
    against NVML's (count and UUIDs) and device taints, each at layer C(dra); a DRA-only node skips the allocatable
    check and its smoke result comes from a claim.
  - A node that a fault-remediation system (NVSentinel, node-problem-detector; the C(quarantine) evidence of its
    M(gpuops.gpu_operator.gpu_cluster_info) view) or a person took out of service - a cordon the driver upgrade does
    not hold - gets the verdict V(quarantined) with its owners, evidence and fix (leave it to its owner), not a
    failure at some layer; it never fails the play.
  - Each failing check is a finding with a layer, evidence and a fix. The node's verdict names the lowest failing
    layer in dependency order - C(driver), C(node), C(toolkit), C(device-plugin), C(dra), C(gpu-health), C(mig),
    C(scheduling), C(workload), C(monitoring).
  - Filters P(gpuops.gpu_operator.fleet_report_json#filter), P(gpuops.gpu_operator.fleet_report_markdown#filter)
    and P(gpuops.gpu_operator.fleet_report_html#filter) (the reports) and P(gpuops.gpu_operator.fleet_failure#filter)
    (whether the play fails) take its result; the C(gpuops.gpu_operator.gpu_validate) role uses them.
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
  smoke:
    description: The C(nodes) result of M(gpuops.gpu_operator.gpu_smoke_test); omitted or null when no smoke test ran.
    type: dict
  monitoring:
    description:
      - Omitted or null to skip the monitoring check.
      - "With Prometheus, a dict with C(source=prometheus), C(series) and C(xid) (the C(data.result) of two instant
        queries - the count of C(DCGM_FI_DEV_GPU_UTIL) series by C(Hostname), and C(DCGM_FI_DEV_XID_ERRORS)) and
        C(node_label) (default C(Hostname))."
      - Without, a dict with C(source=endpoints), C(service) (whether the C(nvidia-dcgm-exporter) Service exists) and
        C(endpoint_slices) (its EndpointSlices).
    type: dict
  mig_layouts:
    description:
      - "MIG instances per GPU by profile for each C(nvidia.com/mig.config) name, for example
        C({all-balanced: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}}). Uniform C(all-<g>g.<m>gb) configs are derived."
    type: dict
  sandbox_events:
    description: C(FailedCreatePodSandBox) Events of the operator namespace, quoted as evidence for the toolkit layer.
    type: list
    elements: dict
  dra:
    description:
      - The C(dra) result of M(gpuops.gpu_operator.gpu_cluster_info); a DeviceClass it lists as missing fails every
        node using DRA at layer C(dra).
    type: dict
  routes:
    description:
      - Who acts on a failure at each layer, layer name to owner, over the defaults - C(driver), C(node), C(toolkit)
        and C(gpu-health) to V(node-os-team); C(device-plugin), C(dra), C(mig), C(scheduling), C(preemption),
        C(workload) and C(monitoring) to V(platform-team); C(quota) and C(queue) to V(namespace-admins).
      - An unknown layer name fails with the list of known ones.
    type: dict
  operator_namespace:
    description: Namespace of the GPU Operator's operand pods (the commands in C(by_owner)).
    type: str
    default: gpu-operator
  nri_plugin:
    description:
      - Whether the ClusterPolicy runs the toolkit's NRI plugin (C(cdi.nriPluginEnabled), the C(cdi.nri_plugin) of
        M(gpuops.gpu_operator.gpu_cluster_info)'s C(cluster_policy)). Then no RuntimeClass or runtime handler is
        expected, the toolkit layer is the ready toolkit pod, and a stuck operand sandbox points at its NRI plugin.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Validate the fleet
  ansible.builtin.set_fact:
    fleet: "{{ gpu_hosts_facts | gpuops.gpu_operator.fleet_summary(cluster.nodes, smoke=smoke.nodes) }}"
"""

RETURN = r"""
_value:
  description:
    - C(rows) (one per host - C(host), C(node), C(pool), C(nvml_gpus), C(driver_version), C(health),
      C(mode), C(allocatable), C(dra_devices), C(product), C(mig_config), C(smoke), C(checks) (outcome per check -
      V(pass), V(fail) or V(skipped)), C(verdict) (V(pass), V(fail) or V(quarantined)), C(failing_layer), C(evidence)
      (of the failing layer, or the quarantine's), C(quarantine) (null, or C(owners), C(evidence) and C(fix)) and
      C(findings) (C(check), C(layer), C(evidence), C(fix), lowest layer first)), C(passed), C(failed),
      C(quarantined), C(failed_by_layer), C(layers), C(checks), C(toolkit_mode) (V(nri-plugin) with O(nri_plugin), else
      V(runtime-handler)), C(by_owner) and C(lines) (a plain-text table).
    - C(by_owner) groups the failing nodes by the owner of their failing layer (O(routes)), the owner of the lowest
      layer first - C(owner), C(layers) and C(failures) (C(node), C(host), C(layer), C(evidence), C(fix) and
      C(command), the first command to run, as P(gpuops.gpu_operator.fleet_console#filter) prints it).
  type: dict
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (  # noqa: E402
    FleetInputs,
    fleet_summary,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report import summary_lines  # noqa: E402


def _fleet_summary(hosts, nodes, **inputs):
    """``inputs``: keywords of :class:`FleetInputs` (the options documented above)."""
    inputs["nri_plugin"] = bool(inputs.get("nri_plugin"))
    summary = fleet_summary(hosts, nodes, FleetInputs(**inputs))
    summary["lines"] = summary_lines(summary)
    return summary


class FilterModule(object):
    def filters(self):
        return {"fleet_summary": _fleet_summary}
