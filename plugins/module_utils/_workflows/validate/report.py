# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The fleet summary as text: the plain table the play prints and the Markdown report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import layer_rank
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import md_cell, md_table
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (
    CHECKS,
    FAIL,
    PASS,
    QUARANTINED,
    SKIP,
)

VERDICT_CELLS = {PASS: "pass", FAIL: "**fail**", QUARANTINED: "quarantined"}


def totals_text(summary):
    """``N passed, N failed`` and, when any, ``N quarantined (their owners act on them)``."""
    text = "%d passed, %d failed" % (summary["passed"], summary["failed"])
    if summary.get("quarantined"):
        text += ", %d quarantined by someone else (their owners act on them)" % summary["quarantined"]
    return text


def summary_lines(summary):
    """A plain-text table of the summary, for the play's output; columns as wide as their longest value."""
    head = ("node", "pool", "product", "nvml", "alloc", "verdict", "layer", "evidence")
    rows = []
    for r in summary["rows"]:
        alloc = (
            r["dra_devices"] or 0
            if r.get("mode") == "dra"
            else sum(v for v in r["allocatable"].values() if isinstance(v, int))
        )
        rows.append(
            (
                r["node"],
                r["pool"] or "-",
                r["product"] or "-",
                str(r["nvml_gpus"]),
                str(alloc),
                r["verdict"],
                r["failing_layer"] or "-",
                (r.get("evidence") or ["-"])[0][:120],
            )
        )
    widths = [max(len(row[i]) for row in [head] + rows) for i in range(len(head) - 1)]
    right = (3, 4)  # the counts

    def line(cells):
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return " ".join(out + [cells[-1]])

    lines = [line(head)] + [line(row) for row in rows]
    lines.append(totals_text(summary))
    return lines


def summary_markdown(summary, title="GPU validation report", generated=None):
    """The report as Markdown: totals, one table row per node with each check, then the evidence per failure."""
    names = [n for n, _d in CHECKS]
    mark = {PASS: "ok", FAIL: "**FAIL**", SKIP: "-"}
    out = ["# %s" % title, ""]
    if generated:
        out += ["Generated %s." % generated, ""]
    out.append("**%s** of %d GPU nodes." % (totals_text(summary), len(summary["rows"])))
    if summary.get("policy_status"):
        out += ["", "Operator: %s." % md_cell(summary["policy_status"]["text"])]
    if summary.get("failed_by_layer"):
        layers = sorted(summary["failed_by_layer"].items(), key=lambda kv: layer_rank(kv[0]))
        out += ["", "Failing layers: " + ", ".join("%s (%d)" % kv for kv in layers) + "."]
    out.append("")
    out += md_table(
        ["node", "pool", "product", "verdict", "layer"] + names,
        [
            [r["node"], r["pool"], r["product"], VERDICT_CELLS[r["verdict"]], r["failing_layer"]]
            + [mark.get(r["checks"].get(n), "-") for n in names]
            for r in summary["rows"]
        ],
    )
    out += owners_markdown(summary.get("by_owner"))
    out += quarantine_markdown(summary["rows"])
    failing = [r for r in summary["rows"] if r["verdict"] == FAIL]
    if failing:
        out += ["", "## Failures", ""]
        for r in failing:
            out += ["### %s: %s" % (r["node"], r["failing_layer"]), ""]
            for f in r["findings"]:
                out.append(
                    "- **%s** (%s check): %s. Fix: %s"
                    % (f["layer"], f["check"], md_cell(f["evidence"]).rstrip("."), md_cell(f["fix"]))
                )
            out.append("")
    out += ["", "Checks: " + "; ".join("%s = %s" % (n, d) for n, d in CHECKS) + "."]
    return "\n".join(out).rstrip() + "\n"


def owners_markdown(groups):
    """The failures grouped by who acts (the summary's ``by_owner``), each with its fix and command; none: no
    lines."""
    if not groups:
        return []
    out = ["", "## Failures by owner", ""]
    for g in groups:
        out += ["### %s (%s)" % (g["owner"], ", ".join(g["layers"])), ""]
        for f in g["failures"]:
            out.append(
                "- **%s** at %s: %s. Fix: %s Run: `%s`"
                % (
                    f["node"],
                    f["layer"],
                    md_cell(f["evidence"] or "-").rstrip("."),
                    md_cell(f["fix"] or "-"),
                    (f["command"] or "-").replace("`", "'"),
                )
            )
        out.append("")
    return out[:-1]


def quarantine_markdown(rows):
    """The nodes someone else took out of service, each with its evidence and the fix; none: no lines."""
    held = [r for r in rows if r["verdict"] == QUARANTINED]
    if not held:
        return []
    out = ["", "## Foreign quarantine", ""]
    for r in held:
        q = r["quarantine"]
        out.append(
            "- **%s** held by %s: %s. Fix: %s"
            % (r["node"], ", ".join(q["owners"]), md_cell(r["evidence"][0]), md_cell(q["fix"]))
        )
    return out
