# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What every report format shows: the fleet table's columns and cells, the drifting cells, the changes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.dra import DRA_KINDS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import worse
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import DRIFT_FIELDS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import (
    STATUS_FAILED,
    STATUS_OK,
    STATUS_UNREACHABLE,
)

#: Health category -> its report title.
CATEGORY_TITLES = {
    "ecc": "ECC",
    "remapped_rows": "Remapped rows",
    "xid": "Xid / lost GPU",
    "thermal": "Thermal",
    "other": "Other",
}

#: Fleet table columns: (key, title).
COLUMNS = (
    ("cluster", "Cluster"),
    ("pool", "Pool"),
    ("node", "Node"),
    ("host", "Host"),
    ("status", "Status"),
    ("gpus", "GPUs (NVML)"),
    ("allocatable", "Allocatable"),
    ("health", "GPU health"),
    ("degraded", "Degraded GPUs"),
    ("driver", "Driver"),
    ("cuda", "CUDA"),
    ("kernel", "Kernel"),
    ("os", "OS"),
    ("vbios", "VBIOS"),
    ("mig_layout", "MIG layout"),
    ("toolkit", "Toolkit"),
    ("runtime", "Runtime"),
    ("issues", "Findings and mismatches"),
)


#: The DRA table's columns (one row per node that uses DRA): (key, title).
DRA_COLUMNS = (
    ("node", "Node"),
    ("mode", "Mode"),
    ("devices", "Devices"),
    ("gpus", "GPUs published / NVML"),
    ("allocated", "Allocated"),
    ("free", "Free"),
    ("tainted", "Tainted"),
    ("driver", "Driver published"),
    ("pools", "Pools"),
    ("drift", "NVML drift"),
    ("problems", "Problems"),
)


def cell_text(value):
    """A value as report text: ``-`` for None, ``yes``/``no`` for booleans."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _alloc(row):
    """Allocatable GPUs, or the MIG resources when the node advertises any."""
    node = row.get("node") or {}
    if node.get("allocatable_mig"):
        return ", ".join("%s=%s" % (k, v) for k, v in sorted(node["allocatable_mig"].items()))
    return node.get("allocatable_gpus")


def issue_parts(row):
    """A row's issues as ``(text before, code, text after)``: its health findings, its host/cluster mismatches and,
    when it was not audited, why (code None)."""
    parts = [("GPU %s: " % f["gpu"] if f["gpu"] is not None else "", f["reason"], "") for f in row["findings"]]
    parts += [
        ("", m["kind"], " (host %s, cluster %s)" % (cell_text(m["host_value"]), cell_text(m["cluster_value"])))
        for m in row["mismatches"]
    ]
    if row.get("message") and row["status"] != STATUS_OK:
        parts.append((row["message"], None, ""))
    return parts


def row_issues(row):
    """A row's issues as text, one entry per issue (see :func:`issue_parts`)."""
    return [before + (code or "") + after for before, code, after in issue_parts(row)]


def row_severity(row, drifting=False):
    """How bad a row is: critical (unreachable, failed, a critical finding), warning (a warning finding, a mismatch,
    a drifting value), unknown (no host facts) or ok."""
    if row["status"] in (STATUS_UNREACHABLE, STATUS_FAILED):
        return "critical"
    if row["status"] != STATUS_OK:
        return "unknown"
    severity = "warning" if row["mismatches"] or drifting else "ok"
    for f in row["findings"]:
        severity = worse(f["severity"], severity)
    return severity


def table_cells(row):
    """The fleet table's cell values of one row, by column key."""
    facts = row.get("facts") or {}
    cells = {
        "cluster": row["cluster"],
        "pool": row["pool"],
        "node": row["node_name"],
        "host": row["host"],
        "status": row["status"],
        "gpus": facts.get("gpu_count"),
        "allocatable": _alloc(row),
        "health": facts.get("gpu_health"),
        "degraded": facts.get("gpus_degraded"),
        "issues": "; ".join(row_issues(row)) or None,
    }
    for field in DRIFT_FIELDS:
        cells[field] = facts.get(field)
    return cells


def drift_outliers(snapshot):
    """{(cluster, pool, node): set(fields)} of rows whose value differs from their pool's majority."""
    out = {}
    for pool in snapshot["pools"]:
        for d in pool["drift"]:
            for node in d["outliers"]:
                out.setdefault((pool["cluster"], pool["pool"], node), set()).add(d["field"])
    return out


def change_lines(snapshot):
    """The changes since the baseline as Markdown list lines (or the one line that says there are none)."""
    ch = snapshot.get("changes")
    if ch is None:
        return ["No baseline snapshot given."]
    base = snapshot["baseline"]["generated_at"]
    if not ch["total"]:
        return ["No change since the baseline of %s." % base]
    lines = ["Against the baseline of %s: %d change(s)." % (base, ch["total"]), ""]
    for rid in ch["added"]:
        lines.append("- added: %s" % rid)
    for rid in ch["removed"]:
        lines.append("- removed: %s" % rid)
    for c in ch["status"]:
        lines.append("- %s: status %s -> %s" % (c["id"], c["before"], c["after"]))
    for c in ch["fields"]:
        lines.append("- %s: %s %s -> %s" % (c["id"], c["field"], cell_text(c["before"]), cell_text(c["after"])))
    for f in ch["findings_new"]:
        lines.append("- %s: new finding GPU %s %s" % (f["id"], cell_text(f["gpu"]), f["reason"]))
    for f in ch["findings_resolved"]:
        lines.append("- %s: resolved finding GPU %s %s" % (f["id"], cell_text(f["gpu"]), f["reason"]))
    for m in ch["mismatches_new"]:
        lines.append("- %s: new mismatch %s" % (m["id"], m["kind"]))
    for m in ch["mismatches_resolved"]:
        lines.append("- %s: resolved mismatch %s" % (m["id"], m["kind"]))
    return lines


def _pool_text(pool):
    text = "%s gen %s" % (pool["name"], pool["generation"])
    if not pool["complete"]:
        text += " incomplete"
    if pool["stale_slices"]:
        text += ", %d stale slice(s)" % pool["stale_slices"]
    return text


def dra_rows(snapshot):
    """The DRA table's cell values by column key, one row per node that uses DRA (none: the reports leave the DRA
    section out); ``drift`` is the list of the row's NVML/DRA mismatch kinds."""
    out = []
    for r in snapshot["fleet"]:
        dra = (r.get("node") or {}).get("dra")
        if dra is None:
            continue
        facts = r.get("facts") or {}
        nvml_count = facts.get("gpu_count") if facts.get("nvml_available") else None  # unknown without NVML
        out.append(
            {
                "node": r["id"],
                "mode": r["node"]["mode"],
                "devices": ", ".join("%s %d" % (t, n) for t, n in sorted(dra["device_types"].items())) or "none",
                "gpus": "%d / %s" % (dra["gpus_published"], cell_text(nvml_count)),
                "allocated": dra["allocated"],
                "free": dra["free"],
                "tainted": dra["tainted"],
                "driver": ", ".join(dra["driver_versions"]) or None,
                "pools": "; ".join(_pool_text(p) for p in dra["pools"]) or None,
                "drift": [m["kind"] for m in r["mismatches"] if m["kind"] in DRA_KINDS],
                "problems": "; ".join(dra["problems"]) or None,
            }
        )
    return out
