# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The HTML reports' shared parts: Jinja2 with autoescape, the page frame (inline CSS and the sortable-table
script, nothing fetched), the severity legend and the versions-per-pool picture (inline SVG).

Templates are string constants (module_utils carry only Python through AnsiballZ). A report passes its own
templates to :func:`render`; they extend ``page.html`` and import ``macros.html``. The pages fit a phone: below
600 px a node table (``table.stack``) turns into a card per node (each cell labelled by its ``data-label``), other
tables scroll in their own box and pictures scale; a node table of more than ``FILTER_FROM`` rows gets a filter
(CSS only) that hides its ok rows.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.compat.version import LooseVersion

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import Requirement

try:
    import jinja2

    HAS_JINJA2, JINJA2_IMPORT_ERROR = True, None
except ImportError:
    HAS_JINJA2, JINJA2_IMPORT_ERROR = False, traceback.format_exc()

#: Jinja2 (present wherever ansible-core is), for ``run_module(requirements=...)`` of a module that renders HTML.
JINJA2 = Requirement("Jinja2", HAS_JINJA2, JINJA2_IMPORT_ERROR)

#: Severity -> (sort rank, fill colour, pale background, glyph, legend text); worst first.
SEVERITIES = {
    "critical": (0, "#c5221f", "#f6c7c3", "\u2715", "critical: act now (the GPU or node is unusable or losing data)"),
    "warning": (1, "#e8a200", "#ffe8a3", "!", "warning: plan a fix (degraded, drifting or disagreeing)"),
    "unknown": (2, "#80868b", "#e3e6ea", "?", "unknown: no data (unreachable, not audited or no host)"),
    "ok": (3, "#1e8e3e", "#d4efdc", "\u2713", "ok: nothing found"),
}

SEVERITY_FILLS = {name: entry[1] for name, entry in SEVERITIES.items()}
SEVERITY_GLYPHS = {name: entry[3] for name, entry in SEVERITIES.items()}

#: A node table of more rows than this gets a filter that shows only the rows not ok.
FILTER_FROM = 50

#: Colours of the values of one field in a pool: the majority, the others (drift), unknown.
MAJORITY_FILL, OTHER_FILLS, UNKNOWN_FILL = "#4e79a7", ("#c2187a", "#f28e2b", "#76b7b2", "#59a14f"), "#c4c8cc"

_STYLE = """
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1360px;
  padding:1rem 1.25rem 3rem;color:#1b1f24;background:#fff;line-height:1.4}
h1{font-size:1.5rem;margin:.5rem 0 .2rem}h2{font-size:1.15rem;margin:2rem 0 .5rem;border-bottom:1px solid #dde1e6}
h3{font-size:1rem;margin:1rem 0 .3rem}
a{color:#0b57d0}.muted{color:#5b636e}.mono{font-family:ui-monospace,Menlo,Consolas,monospace}
.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:.8rem 0}
.card{border:1px solid #d5dae0;border-radius:6px;padding:.45rem .8rem;min-width:7.5rem}
.card b{display:block;font-size:1.4rem}.card span{color:#5b636e;font-size:.8rem}
.card.sev-critical{border-color:#c5221f}.card.sev-warning{border-color:#e8a200}
.legend{display:flex;flex-wrap:wrap;gap:.4rem 1.4rem;list-style:none;padding:0;margin:.5rem 0;font-size:.85rem}
.swatch{display:inline-block;width:1.1em;height:1.1em;line-height:1.1em;text-align:center;color:#fff;
  border-radius:2px;margin-right:.35em;font-size:.8rem;font-weight:700;vertical-align:-.15em}
table{border-collapse:separate;border-spacing:0;font-size:.8rem;margin:.5rem 0}
th,td{border-right:1px solid #d5dae0;border-bottom:1px solid #d5dae0;padding:.25rem .45rem;text-align:left;
  vertical-align:top}
tr>:first-child{border-left:1px solid #d5dae0}thead tr:first-child>*{border-top:1px solid #d5dae0}
th{background:#eef1f5;font-weight:600}
.scroll{max-height:75vh;overflow:auto;border:1px solid #d5dae0;border-radius:4px}
.scroll table{margin:0}.scroll thead th{position:sticky;top:0;z-index:2}
.scroll tr>:first-child{position:sticky;left:0;z-index:1;background:inherit}
.scroll thead tr>:first-child{z-index:3}.scroll tbody tr{background:#fff}
table.sortable th{cursor:pointer;user-select:none;white-space:nowrap}
table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}
table.sortable th[aria-sort=descending]::after{content:' \\25BC'}
td.nowrap{white-space:nowrap}td.wide{min-width:18rem;max-width:30rem}td.mid{min-width:12rem;max-width:22rem}
.sev-ok{background:#d4efdc}.sev-warning{background:#ffe8a3}.sev-critical{background:#f6c7c3;font-weight:600}
.sev-unknown{background:#e3e6ea}
.st-unreachable,.st-failed{background:#f6c7c3}.st-not_audited,.st-not_in_inventory{background:#e3e6ea}
td.drift{background:#ffd6f0;outline:2px solid #c2187a;outline-offset:-2px}
.pictures{display:flex;flex-wrap:wrap;gap:1rem 2rem;align-items:flex-start}
figure{margin:.3rem 0}figcaption{font-size:.85rem;color:#5b636e;margin-bottom:.3rem}
svg text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
dl.fixes dt{font-weight:600;margin-top:.5rem}dl.fixes dd{margin:.1rem 0 .3rem 1.2rem}
:target{scroll-margin-top:1rem}dt:target,li:target{background:#fff3c4}
svg{max-width:100%;height:auto}td,dd,li,code{overflow-wrap:anywhere}
th.check{writing-mode:vertical-rl;transform:rotate(180deg);vertical-align:bottom;padding:.45rem .15rem}
td.check{text-align:center;padding:.25rem .2rem;font-weight:700}
tr.detail>td{background:#fffaf0;font-size:.8rem;padding:.3rem .6rem .45rem 1.2rem}
.scroll tr.detail>td{position:static}tr.detail b{color:#5b636e;font-weight:600}
.filter{display:block;margin:.4rem 0;font-size:.85rem}
body:has(#only-failing:checked) tbody tr[data-severity=ok]{display:none}
@media (max-width:600px){
  body{padding:.6rem .6rem 2rem}h1{font-size:1.25rem}
  figure{overflow-x:auto}figure svg{max-width:none}
  table{display:block;max-width:100%;overflow-x:auto}
  .scroll{max-height:none;overflow:visible;border:0}
  table.stack,table.stack tbody,table.stack tr,table.stack td{display:block}
  table.stack thead{display:none}
  table.stack tr{border:1px solid #d5dae0;border-radius:6px;margin:0 0 .6rem;padding:.3rem .55rem}
  table.stack tr.detail{margin-top:-.7rem;border-top:0;border-radius:0 0 6px 6px}
  table.stack td,table.stack tr>:first-child{border:0;padding:.1rem 0;position:static;min-width:0;max-width:none;
    white-space:normal}
  table.stack td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#5b636e}
  table.stack td.check{display:inline-block;margin:.1rem .5rem .1rem 0;padding:0 .25rem;border-radius:3px}
}
"""

# Click a header to sort by it (again to reverse); numbers numerically, text in natural order (a100-2 before
# a100-10), '-' last; a row's details line (tr.detail) moves with it. A cell's data-value sorts before its text.
# The fragment #sort=<column key>[:desc] sorts each sortable table on load.
_SORT_JS = """
(function(){
  function key(td){var t=td.getAttribute('data-value');if(t===null)t=td.textContent;
    if(t==='-'||t==='')return [2,''];var n=Number(t);return isNaN(n)?[1,t.toLowerCase()]:[0,n];}
  function cmp(a,b){if(a[0]!==b[0])return a[0]-b[0];
    if(a[0]===1)return a[1].localeCompare(b[1],'en',{numeric:true});return a[1]<b[1]?-1:(a[1]>b[1]?1:0);}
  function sortable(table){var heads=table.tHead.rows[0].cells;
    function sortBy(i,desc){var body=table.tBodies[0];var rows=[],details={};
      Array.prototype.forEach.call(body.rows,function(r){if(r.classList.contains('detail'))
        details[rows.length-1]=r;else{r.setAttribute('data-at',rows.length);rows.push(r);}});
      rows.sort(function(r1,r2){var k1=key(r1.cells[i]),k2=key(r2.cells[i]);
        if(k1[0]===2||k2[0]===2)return k1[0]-k2[0];var c=cmp(k1,k2);return desc?-c:c;});
      rows.forEach(function(r){body.appendChild(r);var d=details[r.getAttribute('data-at')];
        if(d)body.appendChild(d);});
      for(var j=0;j<heads.length;j++)heads[j].removeAttribute('aria-sort');
      heads[i].setAttribute('aria-sort',desc?'descending':'ascending');}
    for(var i=0;i<heads.length;i++)(function(i){heads[i].addEventListener('click',function(){
      sortBy(i,heads[i].getAttribute('aria-sort')==='ascending');});})(i);
    var m=/sort=([a-z_]+)(:desc)?/.exec(window.location.hash||'');
    if(m){for(var j=0;j<heads.length;j++)if(heads[j].getAttribute('data-key')===m[1])sortBy(j,!!m[2]);}}
  var tables=document.querySelectorAll('table.sortable');
  for(var i=0;i<tables.length;i++)sortable(tables[i]);
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ style|safe }}</style>
</head><body>
<header><h1>{{ title }}</h1>
<p class="muted">{% block subtitle %}{% endblock %}</p></header>
{% block body %}{% endblock %}
<script>{{ script|safe }}</script>
</body></html>
"""

_MACROS = """
{% macro legend(items) %}
<ul class="legend" id="legend">
{% for sev in items %}
<li data-severity="{{ sev.name }}"><span class="swatch" style="background:{{ sev.fill }}">{{ sev.glyph }}</span>
{{- sev.text }}</li>
{% endfor %}
</ul>
{% endmacro %}

{% macro row_filter(rows, shown_from, words) %}
{% if rows | length > shown_from %}
<label class="filter"><input type="checkbox" id="only-failing"> Show only the {{ words }}
 ({{ rows | rejectattr("severity", "equalto", "ok") | list | length }} of {{ rows | length }} rows)</label>
{% endif %}
{% endmacro %}

{% macro version_chart(chart, id) %}
<svg id="{{ id }}" role="img" aria-label="{{ chart.label }}" width="{{ chart.width }}" height="{{ chart.height }}"
 viewBox="0 0 {{ chart.width }} {{ chart.height }}">
{% for g in chart.groups %}
<text x="0" y="{{ g.y + 13 }}" font-size="13" font-weight="600">{{ g.label }}
<tspan font-size="11" font-weight="400" fill="#5b636e"> ({{ g.nodes }} node(s))</tspan></text>
{% for bar in g.bars %}
<text x="{{ chart.bar_x - 8 }}" y="{{ bar.y + 13 }}" font-size="11" text-anchor="end">{{ bar.title }}</text>
{% for s in bar.segments %}
<rect class="segment" data-field="{{ bar.field }}" data-value="{{ s.value }}" x="{{ s.x }}" y="{{ bar.y }}"
 width="{{ s.width }}" height="18" fill="{{ s.fill }}" stroke="#fff"><title>{{ s.tooltip }}</title></rect>
{% endfor %}
<text x="{{ chart.text_x }}" y="{{ bar.y + 13 }}" font-size="11">{{ bar.text }}</text>
{% endfor %}
{% endfor %}
</svg>
{% endmacro %}
"""


def severity_legend(texts=None):
    """The legend entries (name, fill, glyph, text) of every severity, worst first; ``texts`` replaces the text of
    the severities it names (and leaves out the others)."""
    names = [n for n in SEVERITIES if texts is None or n in texts]
    return [
        {"name": n, "fill": SEVERITIES[n][1], "glyph": SEVERITIES[n][3], "text": (texts or {}).get(n, SEVERITIES[n][4])}
        for n in names
    ]


def severity_rank(severity):
    """Sort rank of a severity, worst first (unknown names last)."""
    return SEVERITIES.get(severity, (len(SEVERITIES),))[0]


def version_key(value):
    """Sort key of a version string (``550.127.08`` before ``570.86.10``), numerically where it can."""
    return LooseVersion(str(value)).version


def _sorted_versions(values):
    try:
        return sorted(values, key=version_key)
    except TypeError:  # parts of different types (``12.8`` against ``12.beta``) compare as text
        return sorted(values, key=str)


def version_chart(groups, label, bar_width=420):
    """The geometry of the versions-per-pool picture.

    ``groups``: ``[(group label, [(field, title, {value or None: [node, ...]}), ...]), ...]``. Each group is a
    heading over one bar per field, split by value, a node per unit width; the majority value is blue, other
    values stand out, unknown is grey.
    """
    bar_x, out, y = 70, [], 4
    for group_label, fields in groups:
        group = {"label": group_label, "y": y, "bars": []}
        group["nodes"] = max([sum(len(n) for n in by_value.values()) for _f, _t, by_value in fields] or [0])
        y += 22
        for field, title, by_value in fields:
            known = {v: n for v, n in by_value.items() if v is not None}
            majority = sorted(known, key=lambda v: (-len(known[v]), str(v)))[0] if known else None
            order = _sorted_versions(known) + ([None] if None in by_value else [])
            total = sum(len(by_value[v]) for v in order) or 1
            x, segments, words, others = bar_x, [], [], iter(OTHER_FILLS * len(order))
            for value in order:
                names = sorted(by_value[value])
                width = round(bar_width * len(names) / float(total), 1)
                fill = UNKNOWN_FILL if value is None else (MAJORITY_FILL if value == majority else next(others))
                shown = "unknown" if value is None else str(value)
                tooltip = "%s %s: %s (%d)" % (title, shown, ", ".join(names), len(names))
                segments.append({"x": x, "width": width, "fill": fill, "value": shown, "tooltip": tooltip})
                words.append("%s \u00d7%d" % (shown, len(names)))
                x = round(x + width, 1)
            group["bars"].append(
                {"field": field, "title": title, "y": y, "segments": segments, "text": ", ".join(words)}
            )
            y += 22
        out.append(group)
        y += 12
    return {
        "label": label,
        "groups": out,
        "bar_x": bar_x,
        "text_x": bar_x + bar_width + 12,
        "width": bar_x + bar_width + 12 + 420,
        "height": max(y, 20),
    }


def render(templates, name, **context):
    """Render template ``name`` of ``templates`` (``{name: source}``) with autoescape, next to ``page.html`` and
    ``macros.html``; ``fills`` and ``glyphs`` map a severity to its colour and sign. A missing variable is an
    error, not an empty string."""
    if not HAS_JINJA2:
        raise GpuOpsError("the HTML report needs the Python library Jinja2 (pip install Jinja2)")
    sources = dict(templates, **{"page.html": _PAGE, "macros.html": _MACROS})
    env = jinja2.Environment(
        loader=jinja2.DictLoader(sources),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.get_template(name).render(
        style=_STYLE, script=_SORT_JS, fills=SEVERITY_FILLS, glyphs=SEVERITY_GLYPHS, filter_from=FILTER_FROM, **context
    )
