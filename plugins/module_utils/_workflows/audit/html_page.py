# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The audit snapshot as one self-contained HTML page: what the template shows, worked out from the snapshot.

The page itself is the Jinja2 template in ``html_template`` (autoescaped: every value is escaped).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.html import (
    render,
    severity_legend,
    severity_rank,
    version_chart,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import natural_key
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.cells import (
    CATEGORY_TITLES,
    COLUMNS,
    DRA_COLUMNS,
    cell_text,
    change_lines,
    dra_rows,
    drift_outliers,
    issue_parts,
    row_severity,
    table_cells,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.fixes import fix_for
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import HEALTH_CATEGORIES
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.html_template import TEMPLATE
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import DRIFT_FIELDS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import STATUS_OK

#: The fleet table's columns: the node first (it stays in view while the table scrolls sideways), its severity,
#: where it is, its status and issues, then the other report columns.
_FIRST = ("node", "severity", "cluster", "pool", "status", "issues")
HTML_COLUMNS = tuple(c for k in _FIRST for c in COLUMNS + (("severity", "Severity"),) if c[0] == k) + tuple(
    c for c in COLUMNS if c[0] not in _FIRST
)

_TITLES = dict(HTML_COLUMNS)

#: Fleet table columns that wrap (long values) and those that never do.
_WIDE = {"issues": "wide", "toolkit": "mid", "runtime": "mid", "mig_layout": "mid", "vbios": "mid"}
_SQUARE, _GAP, _LABEL_W = 18, 4, 150


def _pool_groups(snapshot):
    """``{(cluster, pool): [row, ...]}`` in snapshot order."""
    groups = {}
    for r in snapshot["fleet"]:
        groups.setdefault((r["cluster"], r["pool"]), []).append(r)
    return groups


def versions_picture(snapshot):
    """Driver and CUDA versions per pool (geometry for the ``version_chart`` macro)."""
    groups = []
    for (cluster, pool), rows in sorted(_pool_groups(snapshot).items()):
        fields = []
        for field, title in (("driver", "Driver"), ("cuda", "CUDA")):
            by_value = {}
            for r in rows:
                by_value.setdefault((r["facts"] or {}).get(field), []).append(r["node_name"])
            fields.append((field, title, by_value))
        groups.append(("%s / %s" % (cluster, pool), fields))
    return version_chart(groups, "Driver and CUDA versions per pool")


def _gpu_square(row, gpu, x, y):
    health = gpu["health"] if gpu["health"] in ("ok", "warning", "critical") else "unknown"
    words = ["%s GPU %s" % (row["id"], gpu["index"]), health]
    words += [", ".join(gpu["reasons"])] if gpu["reasons"] else []
    words += ["%s C" % gpu["temperature_c"]] if gpu["temperature_c"] is not None else []
    return {"x": x, "y": y, "severity": health, "index": gpu["index"], "tooltip": " \u00b7 ".join(words)}


def _no_gpu_data(row):
    if row["status"] == STATUS_OK:
        return "no GPU data: NVML %s" % ((row["facts"] or {}).get("nvml_reason") or "found no GPU")
    return "%s: no GPU data" % row["status"]


def health_grids(snapshot):
    """Per pool, one square per GPU of each host coloured by its health; a grey bar for a host without GPU data."""
    out = []
    for (cluster, pool), rows in sorted(_pool_groups(snapshot).items()):
        width = _LABEL_W + max(max([len(r["gpus"]) for r in rows]) * (_SQUARE + _GAP), 250)
        hosts = []
        for i, r in enumerate(sorted(rows, key=lambda r: natural_key(r["node_name"]))):
            y = 4 + i * (_SQUARE + 6)
            squares = [_gpu_square(r, g, _LABEL_W + j * (_SQUARE + _GAP), y) for j, g in enumerate(r["gpus"])]
            hosts.append(
                {
                    "id": r["id"],
                    "node": r["node_name"],
                    "y": y,
                    "squares": squares,
                    "missing": None if squares else _no_gpu_data(r),
                }
            )
        out.append(
            {
                "label": "%s / %s" % (cluster, pool),
                "hosts": hosts,
                "width": width,
                "height": 8 + len(hosts) * (_SQUARE + 6),
                "square": _SQUARE,
                "label_width": _LABEL_W,
            }
        )
    return out


def _issues_cell(row):
    return [{"before": b, "code": c, "after": a} for b, c, a in issue_parts(row)]


def fleet_rows(snapshot):
    """The fleet table: every row's cells with their CSS class, worst rows first (then by id)."""
    outliers = drift_outliers(snapshot)
    out = []
    for r in snapshot["fleet"]:
        drifting = outliers.get((r["cluster"], r["pool"], r["node_name"]), set())
        severity = row_severity(r, bool(drifting))
        cells = dict(table_cells(r), severity=severity)
        tds = []
        for key, _title in HTML_COLUMNS:
            cls = [_WIDE.get(key, "nowrap")]
            if key in drifting:
                cls.append("drift")
            elif key == "status":
                cls.append("st-%s" % r["status"])
            elif key == "health" and cells[key] in ("warning", "critical", "ok"):
                cls.append("sev-%s" % cells[key])
            tds.append({"key": key, "label": _TITLES[key], "text": cell_text(cells[key]), "cls": " ".join(cls)})
        out.append(
            {
                "id": r["id"],
                "status": r["status"],
                "status_link": r["status"] != STATUS_OK,
                "severity": severity,
                "rank": severity_rank(severity),
                "cells": tds,
                "issues": _issues_cell(r),
            }
        )
    return sorted(out, key=lambda row: (row["rank"], natural_key(row["id"])))


def findings(snapshot):
    """Every health finding of the fleet, worst first: row, GPU, severity, code and evidence."""
    found = [dict(f, id=r["id"], host=r["host"]) for r in snapshot["fleet"] for f in r["findings"]]
    return sorted(
        found, key=lambda f: (severity_rank(f["severity"]), natural_key(f["id"]), natural_key(f["gpu"]), f["reason"])
    )


def fixes(snapshot):
    """``[{code, fix}]`` for every code the page shows: finding reasons, mismatch kinds, row statuses."""
    codes = {f["reason"] for r in snapshot["fleet"] for f in r["findings"]}
    codes |= {m["kind"] for r in snapshot["fleet"] for m in r["mismatches"]}
    codes |= {r["status"] for r in snapshot["fleet"] if r["status"] != STATUS_OK}
    return [{"code": c, "fix": fix_for(c)} for c in sorted(codes)]


def _heat(pool):
    return [
        {
            "category": c,
            "severity": pool["health"][c]["severity"],
            "text": pool["health"][c]["severity"]
            if pool["health"][c]["severity"] == "ok"
            else "%s (%d)" % (pool["health"][c]["severity"], pool["health"][c]["gpus_affected"]),
        }
        for c in HEALTH_CATEGORIES
    ]


def render_html(snapshot, title="GPU fleet audit"):
    """The report page: summary, legend, pictures, heat map, drift, DRA (only when some node uses DRA), findings and
    mismatches with their fixes, changes and the fleet table (scrolls with sticky headers, worst rows first,
    sortable)."""
    return render(
        {"audit.html": TEMPLATE},
        "audit.html",
        title=title,
        snap=snapshot,
        s=snapshot["summary"],
        legend=severity_legend(),
        versions=versions_picture(snapshot),
        grids=health_grids(snapshot),
        heat=[dict(p, cells=_heat(p)) for p in snapshot["pools"]],
        categories=[CATEGORY_TITLES[c] for c in HEALTH_CATEGORIES],
        drift=[(p, d) for p in snapshot["pools"] for d in p["drift"]],
        drift_fields=", ".join(DRIFT_FIELDS),
        dra=dra_rows(snapshot),
        dra_columns=DRA_COLUMNS,
        dra_cluster_problems=[(c["name"], p) for c in snapshot["clusters"] for p in c.get("dra_problems") or []],
        findings=findings(snapshot),
        mismatches=[dict(m, id=r["id"]) for r in snapshot["fleet"] for m in r["mismatches"]],
        fixes=fixes(snapshot),
        changes=[line[2:] if line.startswith("- ") else line for line in change_lines(snapshot) if line],
        columns=HTML_COLUMNS,
        rows=fleet_rows(snapshot),
        text=cell_text,
    )
