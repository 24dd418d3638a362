# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The fleet validation summary as one self-contained HTML page: what the template shows, worked out from the
summary. The page itself is the Jinja2 template in ``html_template`` (autoescaped: every value is escaped)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.html import (
    render,
    severity_legend,
    version_chart,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import LAYER_DESCRIPTIONS, layer_rank
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import natural_key
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.html_template import TEMPLATE
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (
    CHECKS,
    FAIL,
    LAYERS,
    QUARANTINED,
)

#: How the layers of a failing node read in the picture, by severity.
LADDER_LEGEND = {
    "critical": "the layer where the node stops: its lowest failing layer, where to look first",
    "warning": "a higher layer that fails too (often a consequence of the stop)",
    "ok": "a layer below the stop: passed",
    "unknown": "above the stop, no finding: not proven",
}
#: The state of a layer in a failing node's row, in a word (the tooltip of a layer without evidence).
STATE_WORDS = {"critical": "stops here", "warning": "fails too", "ok": "passed", "unknown": "not reached"}
#: A check's outcome -> the severity it is shown with.
OUTCOME_SEVERITY = {"pass": "ok", "fail": "critical", "skipped": "unknown"}
#: A check's outcome -> its sign in the check table (the outcome itself is the cell's data-value and aria-label).
OUTCOME_GLYPHS = {"pass": "\u2713", "fail": "\u2715", "skipped": "\u2013"}
_CELL_W, _CELL_H, _LABEL_W, _HEAD_H = 92, 20, 170, 34


def _failing(summary):
    rows = [r for r in summary["rows"] if r["verdict"] == FAIL]
    return sorted(rows, key=lambda r: (layer_rank(r["failing_layer"]), natural_key(r["node"])))


def ladder(summary):
    """Geometry of the stop picture: one row per failing node, one column per layer, bottom layer first."""
    counts = summary.get("failed_by_layer") or {}
    heads = [
        {"layer": layer, "x": _LABEL_W + i * _CELL_W, "count": counts.get(layer, 0)} for i, layer in enumerate(LAYERS)
    ]
    rows = []
    for j, r in enumerate(_failing(summary)):
        stop = layer_rank(r["failing_layer"])
        failing = {f["layer"] for f in r["findings"]}
        y = _HEAD_H + j * (_CELL_H + 4)
        cells = []
        for head in heads:
            rank = layer_rank(head["layer"])
            state = "critical" if rank == stop else ("ok" if rank < stop else "unknown")
            if rank > stop and head["layer"] in failing:
                state = "warning"
            evidence = [f["evidence"] for f in r["findings"] if f["layer"] == head["layer"]]
            tip = "%s, %s: %s" % (r["node"], head["layer"], "; ".join(evidence) or STATE_WORDS[state])
            cells.append({"x": head["x"], "state": state, "layer": head["layer"], "tooltip": tip})
        rows.append({"node": r["node"], "y": y, "layer": r["failing_layer"], "cells": cells})
    return {
        "heads": heads,
        "rows": rows,
        "cell_w": _CELL_W,
        "cell_h": _CELL_H,
        "width": _LABEL_W + len(LAYERS) * _CELL_W,
        "height": _HEAD_H + len(rows) * (_CELL_H + 4) + 4,
    }


def drivers_picture(summary):
    """The driver versions per pool (geometry for the ``version_chart`` macro)."""
    pools = {}
    for r in summary["rows"]:
        by_value = pools.setdefault(r["pool"] or "-", {})
        by_value.setdefault(r["driver_version"], []).append(r["node"])
    groups = [(pool, [("driver", "Driver", by_value)]) for pool, by_value in sorted(pools.items())]
    return version_chart(groups, "Driver versions per pool")


def _allocatable(row):
    """The node's allocatable GPU resources, or its DRA devices on a DRA-only node (no extended resource there)."""
    if row.get("mode") == "dra":
        return "%d DRA devices" % (row.get("dra_devices") or 0)
    return ", ".join("%s=%s" % kv for kv in sorted((row["allocatable"] or {}).items())) or None


def table_rows(summary):
    """The check table: failing nodes first (lowest layer first), then the passing ones, each check's outcome."""
    out = []
    others = sorted((r for r in summary["rows"] if r["verdict"] != FAIL), key=lambda r: natural_key(r["node"]))
    for r in _failing(summary) + others:
        failing = r["verdict"] == FAIL
        out.append(
            {
                "row": r,
                "rank": layer_rank(r["failing_layer"]) if failing else len(LAYERS) + 1,
                "severity": "critical" if failing else ("warning" if r["verdict"] == QUARANTINED else "ok"),
                "allocatable": _allocatable(r),
                "checks": [{"name": n, "outcome": r["checks"].get(n, "skipped")} for n, _d in CHECKS],
            }
        )
    return out


def render_html(summary, title="GPU validation report", generated=None):
    """The report page: totals, legend, where each failing node stops, driver versions per pool, the check table
    (sortable, sticky headers), each failure with evidence and fix, and what the layers and checks mean."""
    layers = [{"name": n, "text": d} for n, d in LAYER_DESCRIPTIONS if n in LAYERS]
    return render(
        {"validate.html": TEMPLATE},
        "validate.html",
        title=title,
        generated=generated,
        summary=summary,
        nodes=len(summary["rows"]),
        legend=severity_legend(LADDER_LEGEND),
        ladder=ladder(summary),
        drivers=drivers_picture(summary),
        rows=table_rows(summary),
        failing=_failing(summary),
        by_layer=sorted((summary.get("failed_by_layer") or {}).items(), key=lambda kv: layer_rank(kv[0])),
        checks=[{"name": n, "text": d} for n, d in CHECKS],
        layers=layers,
        outcome_severity=OUTCOME_SEVERITY,
        outcome_glyphs=OUTCOME_GLYPHS,
    )
