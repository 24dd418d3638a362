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

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.owners import fix_command  # noqa: E402


def _names(names, limit=10):
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _row_lines(row, node, namespace):
    layer = row["failing_layer"]
    at_layer = [f for f in row.get("findings") or [] if f.get("layer") == layer]
    pool = " (pool %s)" % row["pool"] if row.get("pool") else ""
    lines = ["FAIL %s%s at %s: %s" % (row["node"], pool, layer, at_layer[0]["evidence"] if at_layer else "-")]
    lines += ["  and: %s" % f["evidence"] for f in at_layer[1:]]
    fixes = []
    for f in at_layer:
        if f.get("fix") and f["fix"] not in fixes:
            fixes.append(f["fix"])
    lines += ["  fix: %s" % fix for fix in fixes]
    lines.append("  run: %s" % fix_command(row, node, namespace))
    higher = []
    for f in row.get("findings") or []:
        if f.get("layer") != layer and f.get("layer") not in higher:
            higher.append(f["layer"])
    if higher:
        lines.append("  also failing (often a consequence): %s" % ", ".join(higher))
    return lines


def fleet_console(summary, nodes=None, namespace="gpu-operator", reports=None, limit=20):
    rows = summary.get("rows") or []
    failing = [r for r in rows if r.get("verdict") == "fail"]
    layers = list(summary.get("layers") or [])

    def rank(r):
        return (layers.index(r["failing_layer"]) if r.get("failing_layer") in layers else len(layers), r["node"])

    failing.sort(key=rank)
    by_layer = summary.get("failed_by_layer") or {}
    order = sorted(by_layer, key=lambda la: layers.index(la) if la in layers else len(layers))
    head = "GPU validation: %d passed, %d failed of %d GPU nodes" % (
        summary.get("passed", 0),
        summary.get("failed", 0),
        len(rows),
    )
    if summary.get("quarantined"):
        head += ", %d quarantined by someone else" % summary["quarantined"]
    if order:
        head += " (%s)" % ", ".join("%s %d" % (la, by_layer[la]) for la in order)
    lines = [head]
    passed = [r["node"] for r in rows if r.get("verdict") == "pass"]
    if passed and failing:
        lines.append("passed: %s" % _names(sorted(passed)))
    nodes = nodes or {}
    for row in failing[: max(int(limit), 0)]:
        lines += _row_lines(row, nodes.get(row["node"]), namespace)
    for row in [r for r in rows if r.get("verdict") == "quarantined"][: max(int(limit), 0)]:
        q = row["quarantine"]
        lines += ["QUARANTINED %s by %s: %s" % (row["node"], ", ".join(q["owners"]), row["evidence"][0])]
        lines += ["  fix: %s" % q["fix"]]
    if len(failing) > limit:
        lines.append("%d more failing node(s) in the reports" % (len(failing) - limit))
    if reports:
        lines.append("reports: %s" % ", ".join(reports))
    return lines


class FilterModule(object):
    def filters(self):
        return {"fleet_console": fleet_console}
