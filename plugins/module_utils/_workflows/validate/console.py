# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The console summary of a fleet validation: the totals, then each failing node (lowest failing layer first) with
its evidence, fix and the first command to paste; then the report files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.operator_names import operator_object_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.owners import fix_command


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


def operator_lines(operator):
    """The operator's names a run used and how they were found (``_clients.operator_names``), then its problems."""
    line = "operator: namespace %s (%s), %s" % (
        operator["namespace"],
        operator["namespace_source"],
        operator_object_text(operator),
    )
    return [line] + ["operator: %s" % problem for problem in operator["problems"]]


def fleet_console(summary, nodes=None, namespace="gpu-operator", reports=None, limit=20):
    """The lines; ``nodes`` are gpu_cluster_info's (the operand pods the commands name)."""
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
    status = summary.get("policy_status") or {}
    if status.get("meaning") in ("upgrading", "not-proven"):
        lines.append("operator state: %s" % status["text"])
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
