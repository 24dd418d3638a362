# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The audit snapshot as one self-contained HTML page: inline CSS and JavaScript, every value escaped."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from html import escape

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.cells import (
    CATEGORY_TITLES,
    COLUMNS,
    cell_text,
    change_lines,
    drift_outliers,
    table_cells,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import HEALTH_CATEGORIES
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import DRIFT_FIELDS

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
    """``value`` as escaped report text."""
    return escape(cell_text(value), quote=True)


def _html_table(headers, rows, attrs=""):
    """A table of escaped ``headers`` over ``rows`` of rendered cells."""
    out = ["<table%s><thead><tr>%s</tr></thead><tbody>" % (attrs, "".join("<th>%s</th>" % _h(h) for h in headers))]
    for row in rows:
        out.append("<tr>%s</tr>" % "".join(row))
    out.append("</tbody></table>")
    return "".join(out)


def _td(value, cls=None):
    """One escaped table cell, with a CSS class when given."""
    return "<td%s>%s</td>" % (' class="%s"' % _h(cls) if cls else "", _h(value))


def render_html(snapshot, title="GPU fleet audit"):
    """The report page: summary, clusters, health heat map, drift, changes and the sortable fleet table."""
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
    parts += [
        "<li>%s</li>" % _h(line[2:] if line.startswith("- ") else line) for line in change_lines(snapshot) if line
    ]
    parts.append("</ul>")
    parts.append("<h2>Fleet</h2>")
    parts.append('<p class="muted">Click a column to sort. Highlighted cells differ from their pool\'s majority.</p>')
    outliers = drift_outliers(snapshot)
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
