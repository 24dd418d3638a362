# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_wait_line
short_description: One progress line for a wait on the GPU nodes - how many are ready and what the others wait for
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - "Reads one M(gpuops.gpu_operator.gpu_cluster_info) result and says how many GPU nodes are operands-ready (the
    module's C(operands_ready)) and, for the first O(limit) nodes that are not, why - for example
    C(20 s: 5/6 GPU nodes ready; waiting for a100-noruntime-0: device-plugin ContainerCreating)."
  - The reason of a node is its not-ready operand pods (component and waiting reason or phase, and the start of a
    failing sandbox's error), the required operands without a pod, a node the operator has not labelled yet, or a
    node that is not Ready.
  - When every node that is not ready is stuck (the module's C(operands_stuck) - an operand that waiting will not make
    ready), the line says the wait stops there; a polling loop breaks on the same totals (see the example).
  - The nodes are counted from the result's C(totals) and the waiting ones found in its C(node_summary), which holds
    every node not operands-ready whatever C(node_detail), so any O(node_detail) gives the same count; a node
    without its full view in C(nodes) (C(node_detail=none)) is named with its problem codes.
  - Made for the C(loop_control.label) of a polling loop (one line per poll, so the console shows progress without
    retry messages or result dumps); a failed or skipped result gives a line saying so.
options:
  _input:
    description: A M(gpuops.gpu_operator.gpu_cluster_info) result (registered).
    type: dict
    required: true
  elapsed:
    description: Seconds since the wait started, printed first when given.
    type: int
  timeout:
    description: The wait's bound in seconds, named when O(final) and some node is not ready.
    type: int
  final:
    description: This is the wait's last poll; when some node is not ready, the line says the wait gave up.
    type: bool
    default: false
  limit:
    description: Not-ready nodes named at most; the rest are counted.
    type: int
    default: 3
seealso:
  - module: gpuops.gpu_operator.gpu_cluster_info
"""

EXAMPLES = r"""
- name: Wait at most 120 s until every GPU node's operands are ready, one line per poll
  gpuops.gpu_operator.gpu_cluster_info:
    node_detail: problems
  register: wait
  loop: "{{ range(13) | list }}"
  loop_control:
    loop_var: poll
    pause: 10
    label: "{{ wait | gpuops.gpu_operator.fleet_wait_line(elapsed=poll * 10, timeout=120, final=(poll == 12)) }}"
    break_when:
      - wait is failed or wait.totals.nodes_operands_ready + wait.totals.nodes_operands_stuck >= wait.totals.nodes
"""

RETURN = r"""
_value:
  description: The line.
  type: str
"""


#: Characters of a sandbox error kept in the line.
SANDBOX_CHARS = 80


def _pod_reason(component, pod):
    """``device-plugin ContainerCreating`` / ``driver CrashLoopBackOff (4 restarts)`` / ``dcgm-exporter Pending``;
    a failing sandbox adds the start of its error."""
    reason = pod.get("waiting_reason") or ("terminating" if pod.get("terminating") else None) or pod.get("phase")
    text = "%s %s" % (component, reason or "not ready")
    restarts = pod.get("restarts") or 0
    if restarts:
        text += " (%d restarts)" % restarts
    if pod.get("sandbox_error") and reason == "ContainerCreating":
        error = pod["sandbox_error"]
        text += " (FailedCreatePodSandBox: %s)" % (
            error[:SANDBOX_CHARS] + "..." if len(error) > SANDBOX_CHARS else error
        )
    return text


def node_reasons(node):
    """Why one gpu_cluster_info node is not operands-ready, as short phrases."""
    if not node.get("ready", True):
        return ["node not Ready"]
    reasons = []
    gpu = node.get("gpu") or {}
    if not gpu.get("present"):
        reasons.append("not labelled by the operator yet")
    reasons.extend("no %s pod" % c for c in node.get("operands_missing") or [])
    for component, pod in sorted((node.get("operands") or {}).items()):
        if pod and not pod.get("ready") and pod.get("phase") != "Succeeded":
            reasons.append(_pod_reason(component, pod))
    return reasons or ["operands not ready"]


def _reasons(name, nodes, summary):
    if name in nodes:
        return node_reasons(nodes[name])
    return summary[name].get("problems") or ["operands not ready"]


def _not_ready(result, limit):
    nodes = result.get("nodes") or {}
    # every node not operands-ready is in node_summary (which holds every GPU node, or only those with a problem);
    # a result without node_summary has every node in nodes; totals count every GPU node
    summary = result.get("node_summary") or nodes
    waiting = sorted(name for name, node in summary.items() if not node.get("operands_ready"))
    named = ["%s: %s" % (name, ", ".join(_reasons(name, nodes, summary))) for name in waiting[:limit]]
    if len(waiting) > limit:
        named.append("%d more node(s)" % (len(waiting) - limit))
    total = (result.get("totals") or {}).get("nodes", len(summary))
    stuck = sum(1 for name in waiting if summary[name].get("operands_stuck"))
    return total, total - len(waiting), stuck, named


def fleet_wait_line(result, elapsed=None, timeout=None, final=False, limit=3):
    result = result or {}
    prefix = "%d s: " % int(elapsed) if elapsed is not None else ""
    if result.get("skipped"):
        return prefix + "not polled"
    if result.get("failed") or "nodes" not in result:
        return prefix + "could not read the cluster: %s" % (result.get("msg") or "no result")
    total, ready, stuck, named = _not_ready(result, max(int(limit), 0))
    if total == 0:
        return prefix + "no GPU node found"
    line = "%s%d/%d GPU nodes ready" % (prefix, ready, total)
    if ready == total:
        return line
    line += "; waiting for " + "; ".join(named)
    if ready + stuck == total:
        line += " - not waiting longer: %d node(s) stuck; the checks below name what is wrong" % stuck
    elif final:
        after = " after %d s" % int(timeout) if timeout is not None else ""
        line += " - not waiting longer%s; the checks below name what is wrong" % after
    return line


class FilterModule(object):
    def filters(self):
        return {"fleet_wait_line": fleet_wait_line}
