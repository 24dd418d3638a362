# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Render an audit snapshot (see ``_audit``) as JSON, Markdown and self-contained HTML, and write files atomically.

Rendering is deterministic: the same snapshot gives the same bytes, so an unchanged fleet rewrites nothing.
The HTML has no external asset (inline CSS and JavaScript only) and escapes every value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
from html import escape as _escape

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.join import (
    DRIFT_FIELDS,
    HEALTH_CATEGORIES,
    SnapshotError,
    build_snapshot,
    check_baseline,
    same_content,
)

FORMATS = {"json": "json", "markdown": "md", "html": "html"}

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


def render_json(snapshot):
    return json.dumps(snapshot, indent=2, sort_keys=True) + "\n"


def _s(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _alloc(row):
    node = row.get("node") or {}
    if node.get("allocatable_mig"):
        return ", ".join("%s=%s" % (k, v) for k, v in sorted(node["allocatable_mig"].items()))
    return node.get("allocatable_gpus")


def _issues(row):
    parts = ["GPU %s: %s" % (f["gpu"], f["reason"]) if f["gpu"] is not None else f["reason"] for f in row["findings"]]
    parts += [
        "%s (host %s, cluster %s)" % (m["kind"], _s(m["host_value"]), _s(m["cluster_value"])) for m in row["mismatches"]
    ]
    if row.get("message") and row["status"] != "ok":
        parts.append(row["message"])
    return parts


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
        "issues": "; ".join(_issues(row)) or None,
    }
    for field in DRIFT_FIELDS:
        cells[field] = facts.get(field)
    return cells


def _drift_outliers(snapshot):
    """{(cluster, pool, node): set(fields)} of rows whose value differs from their pool's majority."""
    out = {}
    for pool in snapshot["pools"]:
        for d in pool["drift"]:
            for node in d["outliers"]:
                out.setdefault((pool["cluster"], pool["pool"], node), set()).add(d["field"])
    return out


# --- Markdown ----------------------------------------------------------------------------------


def _md(value):
    return _s(value).replace("|", "\\|").replace("\n", " ")


def _md_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _h in headers) + "|"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(snapshot, title="GPU fleet audit"):
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
        "",
        "## Clusters",
        "",
    ]
    lines += _md_table(
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
    lines += _md_table(
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
        lines += _md_table(
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
    lines += ["", "## Findings and mismatches", ""]
    issues = [r for r in snapshot["fleet"] if r["findings"] or r["mismatches"] or r["status"] != "ok"]
    if issues:
        lines += _md_table(
            ["Node", "Host", "Status", "Issues"],
            [[r["id"], r["host"], r["status"], "; ".join(_issues(r))] for r in issues],
        )
    else:
        lines.append("None.")
    lines += ["", "## Changes since the baseline", ""]
    lines += _md_changes(snapshot)
    lines += ["", "## Fleet", ""]
    lines += _md_table(
        [t for _k, t in COLUMNS if _k != "issues"],
        [[table_cells(r)[k] for k, _t in COLUMNS if k != "issues"] for r in snapshot["fleet"]],
    )
    return "\n".join(lines) + "\n"


def _md_changes(snapshot):
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
        lines.append("- %s: %s %s -> %s" % (c["id"], c["field"], _s(c["before"]), _s(c["after"])))
    for f in ch["findings_new"]:
        lines.append("- %s: new finding GPU %s %s" % (f["id"], _s(f["gpu"]), f["reason"]))
    for f in ch["findings_resolved"]:
        lines.append("- %s: resolved finding GPU %s %s" % (f["id"], _s(f["gpu"]), f["reason"]))
    for m in ch["mismatches_new"]:
        lines.append("- %s: new mismatch %s" % (m["id"], m["kind"]))
    for m in ch["mismatches_resolved"]:
        lines.append("- %s: resolved mismatch %s" % (m["id"], m["kind"]))
    return lines


# --- HTML --------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.82rem;margin:.5rem 0}
th,td{border:1px solid #c9ced6;padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:#eef1f5}
#fleet th{cursor:pointer;user-select:none;white-space:nowrap}
#fleet th[aria-sort=ascending]::after{content:' \\25B2'}#fleet th[aria-sort=descending]::after{content:' \\25BC'}
.sev-ok{background:#d9f2dd}.sev-warning{background:#ffe8a3}.sev-critical{background:#f6b2ac;font-weight:600}
.st-unreachable,.st-failed{background:#f6b2ac}.st-not_audited,.st-not_in_inventory{background:#e3e6ea}
td.drift{background:#ffd6f0;outline:2px solid #c2187a;outline-offset:-2px}
.summary li{margin:.15rem 0}.muted{color:#5b636e}
"""

# Click a header to sort by it (again to reverse); numbers sort numerically, '-' last. The page also sorts on
# load when the URL fragment is #sort=<column key>[:desc], so a headless browser can check the order.
_JS = """
(function(){
  var table=document.getElementById('fleet');if(!table)return;
  var heads=table.tHead.rows[0].cells;
  function key(td){var t=td.getAttribute('data-value');if(t===null)t=td.textContent;
    if(t==='-'||t==='')return [2,''];var n=Number(t);return isNaN(n)?[1,t.toLowerCase()]:[0,n];}
  function cmp(a,b){if(a[0]!==b[0])return a[0]-b[0];return a[1]<b[1]?-1:(a[1]>b[1]?1:0);}
  function sortBy(i,desc){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(r1,r2){var k1=key(r1.cells[i]),k2=key(r2.cells[i]);
      if(k1[0]===2||k2[0]===2)return k1[0]-k2[0];var c=cmp(k1,k2);return desc?-c:c;});
    rows.forEach(function(r){body.appendChild(r);});
    for(var j=0;j<heads.length;j++)heads[j].removeAttribute('aria-sort');
    heads[i].setAttribute('aria-sort',desc?'descending':'ascending');}
  for(var i=0;i<heads.length;i++)(function(i){heads[i].addEventListener('click',function(){
    sortBy(i,heads[i].getAttribute('aria-sort')==='ascending');});})(i);
  var m=/sort=([a-z_]+)(:desc)?/.exec(window.location.hash||'');
  if(m){for(var j=0;j<heads.length;j++)if(heads[j].getAttribute('data-key')===m[1])sortBy(j,!!m[2]);}
})();
"""


def _h(value):
    return _escape(_s(value), quote=True)


def _html_table(headers, rows, attrs=""):
    out = ["<table%s><thead><tr>%s</tr></thead><tbody>" % (attrs, "".join("<th>%s</th>" % _h(h) for h in headers))]
    for row in rows:
        out.append("<tr>%s</tr>" % "".join(row))
    out.append("</tbody></table>")
    return "".join(out)


def _td(value, cls=None, title=None):
    attrs = ""
    if cls:
        attrs += ' class="%s"' % _h(cls)
    if title:
        attrs += ' title="%s"' % _h(title)
    return "<td%s>%s</td>" % (attrs, _h(value))


def render_html(snapshot, title="GPU fleet audit"):
    s = snapshot["summary"]
    st = s["statuses"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title><style>%s</style></head><body>" % (_h(title), _CSS),
        "<h1>%s</h1>" % _h(title),
        '<p class="muted">Generated %s &middot; snapshot schema %s</p>'
        % (_h(snapshot["generated_at"]), _h(snapshot["schema_version"])),
        '<ul class="summary" id="summary">',
        '<li>Clusters: <b data-k="clusters">%d</b> (%d failed to answer)</li>' % (s["clusters"], s["clusters_failed"]),
        '<li>Hosts: <b data-k="hosts">%d</b> &mdash; ok %d, unreachable <b data-k="unreachable">%d</b>, failed %d, '
        "not audited %d; GPU nodes without a host: %d</li>"
        % (s["hosts"], st["ok"], st["unreachable"], st["failed"], st["not_audited"], st["not_in_inventory"]),
        '<li>GPUs (NVML): <b data-k="gpus">%d</b>; degraded: <b data-k="gpus_critical">%d</b> critical, '
        '<b data-k="gpus_warning">%d</b> warning</li>' % (s["gpus"], s["gpus_critical"], s["gpus_warning"]),
        "<li>Health findings: %d; mismatches: %d; drifting fields: %d</li></ul>"
        % (s["findings"], s["mismatches"], s["drift"]),
        "<h2>Clusters</h2>",
        _html_table(
            [
                "Cluster",
                "Status",
                "Kubernetes",
                "ClusterPolicy",
                "Operator driver",
                "GPU nodes",
                "Allocatable",
                "Error",
            ],
            [
                [
                    _td(c["name"]),
                    _td(c["status"], "sev-ok" if c["status"] == "ok" else "sev-critical"),
                    _td(c["kubernetes_version"]),
                    _td(c["cluster_policy_state"]),
                    _td(c["operator_driver_version"]),
                    _td(c["gpu_nodes"]),
                    _td(c["gpu_allocatable"]),
                    _td(c["error"]),
                ]
                for c in snapshot["clusters"]
            ],
            ' id="clusters"',
        ),
        "<h2>Health heat map (worst severity per pool; GPUs affected)</h2>",
        _html_table(
            ["Cluster", "Pool", "Nodes", "GPUs", "Degraded"] + [CATEGORY_TITLES[c] for c in HEALTH_CATEGORIES],
            [
                [_td(p["cluster"]), _td(p["pool"]), _td(p["nodes"]), _td(p["gpus"]), _td(p["gpus_degraded"])]
                + [
                    '<td class="sev-%s" data-category="%s" data-severity="%s">%s</td>'
                    % (
                        _h(p["health"][c]["severity"]),
                        _h(c),
                        _h(p["health"][c]["severity"]),
                        _h(
                            p["health"][c]["severity"]
                            if p["health"][c]["severity"] == "ok"
                            else "%s (%d)" % (p["health"][c]["severity"], p["health"][c]["gpus_affected"])
                        ),
                    )
                    for c in HEALTH_CATEGORIES
                ]
                for p in snapshot["pools"]
            ],
            ' id="heatmap"',
        ),
        "<h2>Drift</h2>",
    ]
    drift = [(p, d) for p in snapshot["pools"] for d in p["drift"]]
    if drift:
        parts.append(
            _html_table(
                ["Cluster", "Pool", "Field", "Majority", "Outliers", "Values"],
                [
                    [
                        _td(p["cluster"]),
                        _td(p["pool"]),
                        _td(d["field"]),
                        _td(d["majority"]),
                        _td(", ".join(d["outliers"]), "drift"),
                        _td("; ".join("%s: %s" % (v["value"], ", ".join(v["nodes"])) for v in d["values"])),
                    ]
                    for p, d in drift
                ],
                ' id="drift"',
            )
        )
    else:
        parts.append('<p id="drift">No drift: every pool agrees on %s.</p>' % _h(", ".join(DRIFT_FIELDS)))
    parts.append("<h2>Changes since the baseline</h2><ul id=\"changes\">")
    parts += ["<li>%s</li>" % _h(line[2:] if line.startswith("- ") else line) for line in _md_changes(snapshot) if line]
    parts.append("</ul>")
    parts.append("<h2>Fleet</h2>")
    parts.append('<p class="muted">Click a column to sort. Highlighted cells differ from their pool\'s majority.</p>')
    outliers = _drift_outliers(snapshot)
    head = "".join('<th data-key="%s">%s</th>' % (_h(k), _h(t)) for k, t in COLUMNS)
    body = []
    for r in snapshot["fleet"]:
        cells = table_cells(r)
        drifting = outliers.get((r["cluster"], r["pool"], r["node_name"]), set())
        tds = []
        for k, _t in COLUMNS:
            cls = None
            if k in drifting:
                cls = "drift"
            elif k == "status":
                cls = "st-%s" % r["status"]
            elif k == "health" and cells[k] in ("warning", "critical", "ok"):
                cls = "sev-%s" % cells[k]
            tds.append('<td data-key="%s"%s>%s</td>' % (_h(k), ' class="%s"' % _h(cls) if cls else "", _h(cells[k])))
        body.append('<tr data-id="%s" data-status="%s">%s</tr>' % (_h(r["id"]), _h(r["status"]), "".join(tds)))
    parts.append('<table id="fleet"><thead><tr>%s</tr></thead><tbody>%s</tbody></table>' % (head, "".join(body)))
    parts.append("<script>%s</script></body></html>" % _JS)
    return "\n".join(parts) + "\n"


# --- atomic writes -----------------------------------------------------------------------------


def render_all(snapshot, formats, title):
    out = {}
    for fmt in formats:
        if fmt == "json":
            out[fmt] = render_json(snapshot)
        elif fmt == "markdown":
            out[fmt] = render_markdown(snapshot, title)
        elif fmt == "html":
            out[fmt] = render_html(snapshot, title)
        else:
            raise ValueError("unknown report format %r; use json, markdown or html" % fmt)
    return out


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (IOError, OSError, UnicodeDecodeError):
        return None


def write_atomic(files, mode=0o644):
    """Write ``{path: text}``: every file to a temporary file in its own directory first, then each renamed
    over its target (``os.replace``, atomic on POSIX). A reader sees the old file or the new one, never a part;
    if any temporary file cannot be written, no target is touched and the temporaries are removed."""
    temps = []
    try:
        for path, text in sorted(files.items()):
            directory = os.path.dirname(path) or "."
            fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _path in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


# --- one audit run -----------------------------------------------------------------------------


class ReportError(GpuOpsError):
    """A bad input the user must fix (the message names it and the fix)."""


def load_baseline(path):
    text = read_text(path)
    if text is None:
        raise ReportError("baseline %s cannot be read; give the path of a JSON snapshot an earlier audit wrote" % path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportError("baseline %s is not JSON (%s); give a snapshot an earlier audit wrote" % (path, exc)) from exc
    try:
        return check_baseline(data, path)
    except SnapshotError as exc:
        raise ReportError(str(exc)) from exc


class AuditReport(object):
    """Build the snapshot, render the chosen formats, and write only the files whose content changed.

    A re-run over an unchanged fleet keeps the earlier snapshot's ``generated_at``, so it renders the same bytes
    and reports ``changed=false``.
    """

    def __init__(
        self,
        dest,
        hosts,
        clusters,
        formats,
        basename="gpu-audit",
        baseline=None,
        title="GPU fleet audit",
        thermal_warning_c=85,
    ):
        self.dest = dest
        self.hosts = hosts
        self.clusters = clusters
        self.formats = list(dict.fromkeys(formats))
        self.basename = basename
        self.baseline_path = baseline
        self.title = title
        self.thermal_warning_c = thermal_warning_c

    def path(self, fmt):
        return os.path.join(self.dest, "%s.%s" % (self.basename, FORMATS[fmt]))

    def run(self, now, check_mode=False):
        if os.path.exists(self.dest) and not os.path.isdir(self.dest):
            raise ReportError("dest %s exists and is not a directory; choose a report directory" % self.dest)
        baseline = load_baseline(self.baseline_path) if self.baseline_path else None
        snapshot = build_snapshot(self.hosts, self.clusters, now, baseline, self.thermal_warning_c)
        previous_text = read_text(self.path("json"))
        previous = None
        if previous_text is not None:
            try:
                previous = json.loads(previous_text)
            except ValueError:
                previous = None
        if same_content(previous, snapshot):
            snapshot["generated_at"] = previous["generated_at"]
        rendered = render_all(snapshot, self.formats, self.title)
        files = {self.path(fmt): text for fmt, text in rendered.items()}
        current = {p: read_text(p) for p in files}
        stale = {p: t for p, t in files.items() if current[p] != t}
        if stale and not check_mode:
            if not os.path.isdir(self.dest):
                os.makedirs(self.dest, 0o755)
            write_atomic(stale)
        primary = self.path("markdown" if "markdown" in self.formats else self.formats[0])
        return {
            "changed": bool(stale),
            "files": {fmt: self.path(fmt) for fmt in self.formats},
            "written": [] if check_mode else sorted(stale),
            "summary": snapshot["summary"],
            "generated_at": snapshot["generated_at"],
            "unreachable_hosts": sorted(r["host"] for r in snapshot["fleet"] if r["status"] == "unreachable"),
            "degraded_gpus": [
                "%s GPU %s (%s)" % (r["id"], g["index"], ", ".join(g["reasons"]) or g["health"])
                for r in snapshot["fleet"]
                for g in r["gpus"]
                if g["health"] in ("warning", "critical")
            ],
            "changes": snapshot["changes"],
            "diff": {
                "before": current[primary] or "",
                "after": files[primary],
                "before_header": primary,
                "after_header": primary,
            },
        }
