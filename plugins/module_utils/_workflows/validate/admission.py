# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The admission gate: from the verdict of each validated GPU node and the cluster's view of its taints, decide
which nodes get the admission taint, which lose it, and the admission record each carries (pure).

Per validated node (a fleet_summary row whose node the cluster knows):

- ``hold``: not passed and without the admission taint - add it;
- ``held``: not passed and tainted - nothing to change;
- ``admit``: passed and tainted - remove the taint;
- ``admitted``: passed and without the taint - nothing to change;
- ``left_alone``: cordoned (``spec.unschedulable``) or carrying a NoSchedule/NoExecute taint that is neither ours
  nor one of the ``known_taints`` (the GPU nodes' own, such as ``nvidia.com/gpu``): someone else keeps the node out
  of service, so it is not touched - never admitted, never held, its record not written - and the reason is
  reported.

The record is a compact JSON annotation (``v: 1``): the state, the failing layer and its first evidence, the driver
strategy (``operator`` when the operator runs the node's driver, ``preinstalled`` otherwise) and version, the
runtime (the container toolkit's origin and how GPUs reach pods), the labels and taints checked, and the date of
the last pass (kept from the previous record while the node fails). A record is written only when it changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from dataclasses import dataclass
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    as_document,
    name_of,
    taint_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import (
    DRA_REQUIRED_LABELS,
    REQUIRED_LABELS,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import PASS

DEFAULT_TAINT_KEY = "gpuops.io/unvalidated"
DEFAULT_ANNOTATION = "gpuops.io/admission"
RECORD_VERSION = 1
HOLD, HELD, ADMIT, ADMITTED, LEFT_ALONE = "hold", "held", "admit", "admitted", "left_alone"
ACTIONS = (HOLD, HELD, ADMIT, ADMITTED, LEFT_ALONE)
#: Where each action leaves a node.
OUTCOME = {HOLD: HELD, HELD: HELD, ADMIT: ADMITTED, ADMITTED: ADMITTED, LEFT_ALONE: LEFT_ALONE}
#: Taint effects that keep pods off a node: such a taint that is not ours means someone else holds the node.
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
#: At most this many characters of evidence in the annotation (the reports have all of it).
EVIDENCE_CHARS = 200


@dataclass(frozen=True)
class GateOptions:
    """How the admission gate marks nodes: its ``taint_key`` and ``annotation``, the date a pass records (``today``)
    and the ``known_taints`` whose NoSchedule/NoExecute taint is someone else's hold (the gate leaves it alone)."""

    taint_key: str = DEFAULT_TAINT_KEY
    annotation: str = DEFAULT_ANNOTATION
    today: Optional[str] = None
    known_taints: Sequence[str] = ("nvidia.com/gpu",)

    def __post_init__(self):
        object.__setattr__(self, "known_taints", tuple(self.known_taints or ()))


def someone_elses_hold(node, taint_key, known_taints=()):
    """Why someone else keeps ``node`` (a gpu_cluster_info node) out of service, or None."""
    if node.get("unschedulable"):
        return "cordoned (spec.unschedulable)"
    others = [
        taint_text(t)
        for t in node.get("taints") or []
        if t.get("effect") in BLOCKING_EFFECTS and t.get("key") != taint_key and t.get("key") not in known_taints
    ]
    if others:
        return "tainted by someone else: %s" % ", ".join(others)
    return None


def driver_strategy(node):
    """``operator`` when the GPU Operator runs (or is to run) the node's driver, else ``preinstalled``."""
    operands = node.get("operands") or {}
    deploy = node.get("deploy") or {}
    return "operator" if "driver" in operands or deploy.get("driver") == "true" else "preinstalled"


def _previous_pass(text):
    record = as_document(text)
    if record and record.get("v") == RECORD_VERSION:
        return record.get("passed")
    return None


def admission_record(row, node, options, previous=None, cluster_runtime=None):
    """The admission record of one validated node (a dict; :func:`record_text` writes it) under ``options`` (a
    :class:`GateOptions`); ``cluster_runtime``: ``{injection, cdi}``, how the toolkit injects GPUs cluster-wide
    (``runtime-handler`` or ``nri-plugin``) and whether CDI is on (None: unknown)."""
    passed = row.get("verdict") == PASS
    evidence = (row.get("evidence") or [None])[0]
    operands = node.get("operands") or {}
    mode = node.get("mode")
    return {
        "v": RECORD_VERSION,
        "state": "admitted" if passed else "held",
        "layer": None if passed else row.get("failing_layer"),
        "evidence": evidence[:EVIDENCE_CHARS] if evidence and not passed else None,
        "driver": {
            "strategy": driver_strategy(node),
            "version": row.get("driver_version") or (node.get("gpu") or {}).get("driver_version"),
        },
        "runtime": {
            "toolkit": "operator" if "container-toolkit" in operands else "host",
            "mode": mode,
            "injection": (cluster_runtime or {}).get("injection"),
            "cdi": (cluster_runtime or {}).get("cdi"),
        },
        "checked": {
            "labels": list(DRA_REQUIRED_LABELS if mode == "dra" else REQUIRED_LABELS),
            "taints": sorted(
                taint_text(t)
                for t in node.get("taints") or []
                if t.get("key") != options.taint_key and t.get("key") in options.known_taints
            ),
        },
        "passed": options.today if passed else _previous_pass(previous),
    }


def record_text(record):
    """The record as compact JSON with sorted keys (the same record, the same text)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def admission_plan(rows, nodes, options=GateOptions(), annotations=None, cluster_runtime=None):
    """What the gate does: ``{nodes, taint, untaint, annotate, counts, taint_key}``.

    ``rows``: fleet_summary's rows; ``nodes``: gpu_cluster_info's nodes (taints, unschedulable, operands, mode);
    ``options``: a :class:`GateOptions`; ``annotations``: node name -> its current admission annotation (text;
    missing: none); ``cluster_runtime``: see :func:`admission_record`. ``nodes`` of the result maps each validated
    node to ``{action, reason, layer, record}``; ``taint`` and ``untaint`` list the nodes whose taint changes,
    ``annotate`` the records that change (node -> text); a node the cluster does not know is not in the plan (its
    row fails at layer node).
    """
    annotations = annotations or {}
    taint_key = options.taint_key
    plan = {"nodes": {}, "taint": [], "untaint": [], "annotate": {}, "taint_key": taint_key}
    for row in sorted(rows, key=lambda r: r.get("node") or ""):
        name = row.get("node")
        node = nodes.get(name)
        if node is None:
            continue
        passed = row.get("verdict") == PASS
        tainted = any(t.get("key") == taint_key for t in node.get("taints") or [])
        reason = someone_elses_hold(node, taint_key, options.known_taints)
        entry = {"action": None, "reason": reason, "layer": row.get("failing_layer"), "record": None}
        plan["nodes"][name] = entry
        if reason:
            entry["action"] = LEFT_ALONE
            continue
        if passed:
            entry["action"] = ADMIT if tainted else ADMITTED
            entry["reason"] = "passed every layer"
        else:
            entry["action"] = HELD if tainted else HOLD
            entry["reason"] = "fails at layer %s" % row.get("failing_layer")
        if entry["action"] == HOLD:
            plan["taint"].append(name)
        elif entry["action"] == ADMIT:
            plan["untaint"].append(name)
        previous = annotations.get(name)
        entry["record"] = admission_record(row, node, options, previous, cluster_runtime)
        text = record_text(entry["record"])
        if text != previous:
            plan["annotate"][name] = text
    plan["counts"] = {a: sum(1 for e in plan["nodes"].values() if e["action"] == a) for a in ACTIONS}
    return plan


def plan_lines(plan):
    """One line per node that is not plainly admitted: what the gate does (or would do) and why."""
    words = {
        HOLD: "hold (add the taint)",
        HELD: "held (keeps the taint)",
        ADMIT: "admit (remove the taint)",
        LEFT_ALONE: "left alone",
    }
    counts = plan["counts"]
    done = ", ".join("%d %s" % (counts[a], a.replace("_", " ")) for a in ACTIONS if counts[a])
    lines = ["admission (%s): %s" % (plan["taint_key"], done or "no validated node the cluster knows")]
    for name, entry in sorted(plan["nodes"].items()):
        if entry["action"] != ADMITTED:
            lines.append("%s: %s - %s" % (name, words[entry["action"]], entry["reason"]))
    return lines


def annotations_by_node(node_objects, annotation=DEFAULT_ANNOTATION):
    """Node name -> its ``annotation`` value, from raw Node objects (those without it left out)."""
    out = {}
    for obj in node_objects or []:
        value = annotations_of(obj).get(annotation)
        if value is not None:
            out[name_of(obj)] = value
    return out


def plan_report(plan):
    """The gate as the validation report carries it: where the run leaves each node (``state`` held, admitted or
    left_alone, with its reason, layer and record) and the counts per state. Not the actions: the next run finds the
    nodes where this one left them and writes the same report (the console prints the actions)."""
    nodes = {
        name: {"state": OUTCOME[e["action"]], "reason": e["reason"], "layer": e["layer"], "record": e["record"]}
        for name, e in plan["nodes"].items()
    }
    counts = {s: sum(1 for e in nodes.values() if e["state"] == s) for s in (HELD, ADMITTED, LEFT_ALONE)}
    return {"taint_key": plan["taint_key"], "counts": counts, "nodes": nodes}


def gate_plan(summary, nodes, node_objects, cluster_policy, options):
    """:func:`admission_plan` over fleet_summary's ``summary`` with its ``report`` and printed ``lines``;
    ``node_objects`` raw Nodes (their admission annotations), ``cluster_policy`` gpu_cluster_info's (CDI),
    ``options`` a :class:`GateOptions`."""
    cdi = (cluster_policy or {}).get("cdi") or {}
    plan = admission_plan(
        summary.get("rows") or [],
        nodes or {},
        options,
        annotations_by_node(node_objects, options.annotation),
        {"injection": summary.get("toolkit_mode"), "cdi": cdi.get("enabled")},
    )
    plan["report"] = plan_report(plan)
    plan["lines"] = plan_lines(plan)
    return plan
