# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The audit snapshot as a Markdown report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import md_table
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.cells import (
    CATEGORY_TITLES,
    COLUMNS,
    DRA_COLUMNS,
    cell_text,
    change_lines,
    dra_rows,
    row_issues,
    table_cells,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import HEALTH_CATEGORIES
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import DRIFT_FIELDS


def _table(headers, rows):
    """A Markdown table of report cells (see :func:`cell_text`)."""
    return md_table(headers, [[cell_text(c) for c in row] for row in rows])


def render_markdown(snapshot, title="GPU fleet audit"):
    """Summary, clusters, health by pool, drift, DRA (only when some node uses DRA), issues, changes and the fleet
    table, as Markdown."""
    s = snapshot["summary"]
    st = s["statuses"]
    lines = [
        "# %s" % title,
        "",
        "Generated %s, snapshot schema %s." % (snapshot["generated_at"], snapshot["schema_version"]),
        "",
        "- Clusters: %d (%d failed to answer)" % (s["clusters"], s["clusters_failed"]),
        "- Hosts: %d (ok %d, unreachable %d, failed %d, not audited %d); GPU nodes without a host: %d"
        % (
            s["hosts"],
            st["ok"],
            st["unreachable"],
            st["failed"],
            st["not_audited"],
            st["not_in_inventory"],
        ),
        "- GPUs (NVML): %d; degraded: %d critical, %d warning" % (s["gpus"], s["gpus_critical"], s["gpus_warning"]),
        "- Health findings: %d; mismatches: %d; drifting fields: %d" % (s["findings"], s["mismatches"], s["drift"]),
    ]
    dra = dra_rows(snapshot)
    if dra:
        lines.append("- Nodes using DRA: %d; with NVML/DRA drift: %d" % (len(dra), sum(1 for d in dra if d["drift"])))
    lines += ["", "## Clusters", ""]
    lines += _table(
        ["Cluster", "Status", "Kubernetes", "ClusterPolicy", "Operator driver", "GPU nodes", "Allocatable", "Error"],
        [
            [
                c["name"],
                c["status"],
                c["kubernetes_version"],
                c["cluster_policy_state"],
                c["operator_driver_version"],
                c["gpu_nodes"],
                c["gpu_allocatable"],
                c["error"],
            ]
            for c in snapshot["clusters"]
        ],
    )
    lines += ["", "## Health by pool", ""]
    lines += _table(
        ["Cluster", "Pool", "Nodes", "GPUs", "Degraded"] + [CATEGORY_TITLES[c] for c in HEALTH_CATEGORIES],
        [
            [p["cluster"], p["pool"], p["nodes"], p["gpus"], p["gpus_degraded"]]
            + [
                "ok"
                if p["health"][c]["severity"] == "ok"
                else "%s (%d GPU)" % (p["health"][c]["severity"], p["health"][c]["gpus_affected"])
                for c in HEALTH_CATEGORIES
            ]
            for p in snapshot["pools"]
        ],
    )
    lines += ["", "## Drift", ""]
    drift = [(p, d) for p in snapshot["pools"] for d in p["drift"]]
    if drift:
        lines += _table(
            ["Cluster", "Pool", "Field", "Majority", "Outliers", "Values"],
            [
                [
                    p["cluster"],
                    p["pool"],
                    d["field"],
                    d["majority"],
                    ", ".join(d["outliers"]),
                    "; ".join("%s: %s" % (v["value"], ", ".join(v["nodes"])) for v in d["values"]),
                ]
                for p, d in drift
            ],
        )
    else:
        lines.append("No drift: every pool agrees on %s." % ", ".join(DRIFT_FIELDS))
    if dra:
        lines += ["", "## DRA", ""]
        lines += _table(
            [t for _k, t in DRA_COLUMNS],
            [[d[k] if k != "drift" else ", ".join(d[k]) or None for k, _t in DRA_COLUMNS] for d in dra],
        )
        problems = [(c["name"], p) for c in snapshot["clusters"] for p in c.get("dra_problems") or []]
        if problems:
            lines.append("")
            lines += ["- %s: %s" % (name, p) for name, p in problems]
    lines += ["", "## Findings and mismatches", ""]
    issues = [r for r in snapshot["fleet"] if r["findings"] or r["mismatches"] or r["status"] != "ok"]
    if issues:
        lines += _table(
            ["Node", "Host", "Status", "Issues"],
            [[r["id"], r["host"], r["status"], "; ".join(row_issues(r))] for r in issues],
        )
    else:
        lines.append("None.")
    lines += ["", "## Changes since the baseline", ""]
    lines += change_lines(snapshot)
    lines += ["", "## Fleet", ""]
    lines += _table(
        [t for _k, t in COLUMNS if _k != "issues"],
        [[table_cells(r)[k] for k, _t in COLUMNS if k != "issues"] for r in snapshot["fleet"]],
    )
    return "\n".join(lines) + "\n"
