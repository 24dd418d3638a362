# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Foreign quarantine in the canary plan: GPU nodes a remediation system or a person took out of service are left
out of the waves and never touched but for the skip label (the upgrade controller would otherwise upgrade a cordoned
node outside the slot limit), counted against the upgrade controller's ``maxUnavailable``, and reported apart from
upgrade failures. With ``mode=fail`` the gate refuses to start while any planned GPU node is quarantined."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import is_gpu_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.operand_pods import conditions_by_type
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    evidence_text,
    owners_of,
    quarantine_evidence,
    quarantine_fix,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import WAVE_PENDING

#: What the plan does with a foreign-quarantined GPU node: leave it out of the waves, or refuse to start.
MODES = ("skip", "fail")
DEFAULT_MAX_UNAVAILABLE = "25%"


def quarantined(nodes, known):
    """``{node name: evidence}`` of the GPU nodes someone else took out of service (see
    :func:`.._view.quarantine.quarantine_evidence`)."""
    out = {}
    for node in nodes:
        if is_gpu_node(node):
            evidence = quarantine_evidence(node, known)
            if evidence:
                out[name_of(node)] = evidence
    return out


def max_unavailable(value, total):
    """The upgrade controller's ``maxUnavailable`` (a count, or a percentage of ``total`` rounded up) as a count."""
    text = str(DEFAULT_MAX_UNAVAILABLE if value in (None, "") else value).strip()
    try:
        if text.endswith("%"):
            return int(math.ceil(total * float(text[:-1]) / 100.0 - 1e-9))
        return int(text)
    except ValueError:
        raise PlanError(
            "upgrade policy maxUnavailable is %r; use a node count such as 2 or a percentage such as '25%%'" % value
        ) from None


def _unavailable(node):
    """True when the upgrade controller counts the node as unavailable: cordoned or not Ready."""
    ready = conditions_by_type((node.get("status") or {}).get("conditions")).get("Ready", {}).get("status") == "True"
    return bool((node.get("spec") or {}).get("unschedulable")) or not ready


def budget(nodes, found, cp, policy):
    """How much of the upgrade controller's ``maxUnavailable`` the foreign-quarantined nodes use: ``{"max_unavailable"
    (as set: ``policy`` over the ClusterPolicy's), "gpu_nodes", "allowed" (as a count), "used_by_quarantine" (the
    quarantined nodes that are cordoned or NotReady), "left"}``."""
    have = (((cp or {}).get("spec") or {}).get("driver") or {}).get("upgradePolicy") or {}
    value = dict(have, **(policy or {})).get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
    by_name = {name_of(n): n for n in nodes}
    gpu_nodes = sum(1 for n in nodes if is_gpu_node(n))
    allowed = max_unavailable(value, gpu_nodes)
    used = sorted(n for n in found if _unavailable(by_name[n]))
    return {
        "max_unavailable": value,
        "gpu_nodes": gpu_nodes,
        "allowed": allowed,
        "used_by_quarantine": used,
        "left": max(0, allowed - len(used)),
    }


def report(found, budget_now):
    """The plan's ``foreign_quarantine``: per node (sorted) its ``owners``, ``evidence``, whether it counts against
    ``maxUnavailable`` and the fix."""
    used = set(budget_now["used_by_quarantine"])
    return [
        {
            "node": n,
            "owners": owners_of(found[n]),
            "evidence": found[n],
            "counts_against_max_unavailable": n in used,
            "fix": quarantine_fix(found[n]),
        }
        for n in sorted(found)
    ]


def failures(found, budget_now, mode, planned, exclude=()):
    """The gate's refusals: every quarantined node that is not in ``exclude`` with ``mode=fail``; with ``skip``, a
    budget that the quarantined nodes use up while nodes are planned (the controller would start none)."""
    if mode == "fail":
        return [
            "node %s is quarantined by someone else (%s); foreign_quarantine=fail refuses to start: let the owner "
            "release it, exclude it, or set foreign_quarantine=skip to leave it out of the waves"
            % (n, evidence_text(found[n]))
            for n in sorted(found)
            if n not in exclude
        ]
    used = budget_now["used_by_quarantine"]
    if planned and used and not budget_now["left"]:
        return [
            "the foreign-quarantined node(s) %s use the whole maxUnavailable of the upgrade controller (%s of %d GPU "
            "nodes = %d): it would start no upgrade; raise upgrade_policy.maxUnavailable above %d or wait until "
            "the remediation system releases them"
            % (
                ", ".join(used),
                budget_now["max_unavailable"],
                budget_now["gpu_nodes"],
                budget_now["allowed"],
                len(used),
            )
        ]
    return []


def set_aside(record, found):
    """Move the nodes someone else quarantined since the record was made out of its waves that have not started
    (pending, not released) into ``record["quarantined"]``; returns the names moved."""
    moved = []
    for wave in record.get("waves") or []:
        if wave.get("released") or wave.get("status") != WAVE_PENDING:
            continue
        moved.extend(n for n in wave["nodes"] if n in found)
        wave["nodes"] = [n for n in wave["nodes"] if n not in found]
    record["quarantined"] = sorted(set(record.get("quarantined") or []) | set(moved))
    return moved
