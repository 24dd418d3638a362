# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: canary_plan_lines
short_description: A canary upgrade plan as lines of text - target, waves, unplanned nodes, gate and CUDA workloads
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Renders the RV(gpuops.gpu_operator.gpu_canary_upgrade#module:plan) of M(gpuops.gpu_operator.gpu_canary_upgrade)
    for people - the source and target versions with the mode and whether the run resumes, the skip label, one line
    per wave (status, taint, nodes), the nodes left unplanned or excluded, one line per node someone else
    quarantined (its owners and evidence, whether it uses C(maxUnavailable)) with the budget that is left, the gate
    (PodDisruptionBudgets, GPU jobs), each GPU workload's CUDA version against the target driver, per planned node
    how its driver restarts (in place or the full flow) with the GPU pods and C(nvidia.com/gpu.deploy.client)
    DaemonSet pods it evicts.
  - The gate's failures are not among the lines - the role's failure message names them, once.
  - A list of nodes (a wave's, the unplanned, the excluded) names at most O(limit) of them and counts the rest, and
    at most O(limit) per-node lines (quarantined nodes, driver restarts) are printed, then one line counting the
    others; the plan itself holds them all.
options:
  _input:
    description: The C(plan) of a M(gpuops.gpu_operator.gpu_canary_upgrade) result.
    type: dict
    required: true
  limit:
    description: Nodes named in one list, and per-node lines printed, at most.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ canary.plan | gpuops.gpu_operator.canary_plan_lines }}"
"""

RETURN = r"""
_value:
  description: The lines, in the order above.
  type: list
  elements: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import evidence_text  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (  # noqa: E402
    source_text,
    target_text,
)


def _names(items, key=None, limit=None):
    names = [str(i[key] if key else i) for i in items or []]
    shown = names if limit is None else names[:limit]
    more = " and %d more" % (len(names) - len(shown)) if len(names) > len(shown) else ""
    return (", ".join(shown) or "none") + more


def _capped(lines, limit, what):
    """At most ``limit`` of ``lines``, then one line counting the others."""
    more = ["  ... and %d more %s (in the plan)" % (len(lines) - limit, what)] if len(lines) > limit else []
    return lines[:limit] + more


def _cuda_lines(cuda):
    target = cuda.get("target_driver") or "unchanged"
    lines = []
    for w in cuda.get("workloads") or []:
        verdict = "ok" if w.get("ok") else ("too old" if w.get("ok") is False else "not compared")
        lines.append(
            "CUDA %s: %s (%s) needs driver >= %s, target %s: %s"
            % (w.get("cuda"), w.get("pod"), w.get("image"), w.get("required_driver"), target, verdict)
        )
    lines.extend("unknown CUDA (info): %s (%s)" % (w.get("pod"), w.get("image")) for w in cuda.get("unknown") or [])
    return lines


def _quarantine_lines(plan, limit):
    found = plan.get("foreign_quarantine") or []
    if not found:
        return []
    budget = plan.get("budget") or {}
    lines = [
        "Foreign quarantine (left out of the waves, cordon and taints untouched, skip label held): %d node(s); "
        "maxUnavailable %s of %s GPU nodes = %s, %s used by them, %s left"
        % (
            len(found),
            budget.get("max_unavailable"),
            budget.get("gpu_nodes"),
            budget.get("allowed"),
            len(budget.get("used_by_quarantine") or []),
            budget.get("left"),
        )
    ]
    per_node = [
        "  %s: %s%s"
        % (
            q["node"],
            evidence_text(q["evidence"]),
            "" if q["counts_against_max_unavailable"] else " (schedulable and Ready: not counted)",
        )
        for q in found
    ]
    return lines + _capped(per_node, limit, "quarantined node(s)")


def _disruption_lines(disruption, limit):
    if not disruption:
        return []
    lines = [
        "Driver restart (operator %s): in place on %s; full flow on %s; %d GPU workload pod(s) evicted"
        % (
            disruption.get("release") or "unknown",
            _names(disruption.get("in_place")),
            _names(disruption.get("full")),
            disruption.get("evicted_workloads", 0),
        )
    ]
    per_node = [
        "%s: driver restart %s (%s); evicts %s; %s pods: %s"
        % (
            n["node"],
            n["driver_restart"],
            n["reason"],
            _names(n["evicted"]),
            disruption["client_label"],
            _names(n["clients"]),
        )
        for n in disruption.get("nodes") or []
    ]
    return lines + _capped(per_node, limit, "node(s)")


def canary_plan_lines(plan, limit=10):
    limit = max(int(limit), 1)
    gate = plan.get("gate") or {}
    state = "resuming, phase %s" % plan.get("phase") if plan.get("resumed") else "new"
    lines = [
        "Canary upgrade to %s (from %s; %s mode, %s, record %s)"
        % (target_text(plan.get("target")), source_text(plan.get("from")), plan.get("mode"), state, plan.get("record")),
        "Every node not in the current wave carries %s=true." % plan.get("skip_label"),
    ]
    lines.extend(
        "%s [%s] taint %s, remove skip label, upgrade: %s"
        % (w["name"], w["status"], w["taint"], _names(w["nodes"], limit=limit))
        for w in plan.get("waves") or []
    )
    lines.append("Not planned (keep the skip label): %s" % _names(plan.get("unplanned"), limit=limit))
    lines.append("Excluded: %s" % _names(plan.get("excluded"), limit=limit))
    lines.extend(_quarantine_lines(plan, limit))
    verdict = "passed" if gate.get("passed") else "FAILED"
    pdbs, jobs = _names(gate.get("pdbs"), "name"), _names(gate.get("gpu_jobs"), "pod")
    lines.append("Gate: %s; PDBs: %s; GPU jobs: %s" % (verdict, pdbs, jobs))
    lines.extend(_cuda_lines(gate.get("cuda") or {}))
    return lines + _disruption_lines(plan.get("disruption"), limit)


class FilterModule(object):
    def filters(self):
        return {"canary_plan_lines": canary_plan_lines}
