# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The validation report's Jinja2 template (rendered with autoescape by ``_core.html.render``; see ``html_page``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

TEMPLATE = """{% extends "page.html" %}
{% import "macros.html" as m %}
{% macro layer_link(layer) %}
{%- if layer %}<a href="#layer-{{ layer }}">{{ layer }}</a>{% else %}-{% endif %}
{%- endmacro %}
{% block subtitle %}{% if generated %}Generated {{ generated }} &middot; {% endif %}{{ nodes }} GPU node(s), checked
layer by layer{% endblock %}
{% block body %}
<section class="cards" id="summary">
<div class="card"><b data-k="nodes">{{ nodes }}</b><span>GPU nodes</span></div>
<div class="card{{ ' sev-ok' if not summary.failed }}"><b data-k="passed">{{ summary.passed }}</b>
<span>passed</span></div>
<div class="card{{ ' sev-critical' if summary.failed }}"><b data-k="failed">{{ summary.failed }}</b>
<span>failed</span></div>
{% for layer, count in by_layer %}
<div class="card sev-warning"><b data-k="layer-{{ layer }}">{{ count }}</b><span>stop at {{ layer }}</span></div>
{% endfor %}
</section>

<h2>Where each failing node stops</h2>
{% if ladder.rows %}
{{ m.legend(legend) }}
<figure><figcaption>One row per failing node, one column per layer, bottom of the stack on the left; a column's
count is the nodes that stop there. Each node's evidence is on its line in the table below and under Failures
(a node's name links there).</figcaption>
<svg id="ladder" role="img" aria-label="The layer where each failing node stops" width="{{ ladder.width }}"
 height="{{ ladder.height }}" viewBox="0 0 {{ ladder.width }} {{ ladder.height }}">
{% for h in ladder.heads %}
<a href="#layer-{{ h.layer }}"><text x="{{ h.x + ladder.cell_w / 2 }}" y="13" font-size="11" font-weight="600"
 text-anchor="middle" fill="#0b57d0">{{ h.layer }}</text></a>
<text x="{{ h.x + ladder.cell_w / 2 }}" y="27" font-size="10" text-anchor="middle" fill="#5b636e">
{{- h.count }} stop{{ "s" if h.count != 1 }}</text>
{% endfor %}
{% for r in ladder.rows %}
<g class="ladder-row" data-node="{{ r.node }}" data-layer="{{ r.layer }}">
<a href="#node-{{ r.node }}"><text x="0" y="{{ r.y + 14 }}" font-size="12" fill="#0b57d0">{{ r.node }}</text></a>
{% for c in r.cells %}
<g class="layer-cell" data-layer="{{ c.layer }}" data-state="{{ c.state }}"><title>{{ c.tooltip }}</title>
<rect x="{{ c.x + 2 }}" y="{{ r.y }}" width="{{ ladder.cell_w - 4 }}" height="{{ ladder.cell_h }}" rx="3"
 fill="{{ fills[c.state] }}" fill-opacity="{{ '0.35' if c.state in ('ok', 'unknown') else '1' }}"/>
{% if c.state in ("critical", "warning") %}
<text x="{{ c.x + ladder.cell_w / 2 }}" y="{{ r.y + 14 }}" font-size="12" font-weight="700" text-anchor="middle"
 fill="#fff">{{ glyphs[c.state] }}</text>
{% endif %}
</g>
{% endfor %}
</g>
{% endfor %}
</svg></figure>
{% else %}
<p id="ladder">Every node passes every layer it was checked at.</p>
{% endif %}

<h2>Driver versions per pool</h2>
<figure><figcaption>One bar per pool, split by the driver version NVML reports, a node per unit: blue is the pool's
majority, other colours differ from it, grey is unknown (NVML did not answer).</figcaption>
{{ m.version_chart(drivers, "drivers") }}</figure>

<h2>Nodes and checks</h2>
<p class="muted">Failing nodes first, lowest layer first, each with its evidence and fix on the line below. One
column per check (&#x2713; pass, &#x2715; fail, &ndash; not run; see <a href="#check-list">Checks</a>). Click a
column to sort (again to reverse).</p>
{{ m.row_filter(rows, filter_from, "failing and quarantined nodes") }}
<div class="scroll"><table id="checks" class="sortable stack"><thead><tr>
<th data-key="node">Node</th><th data-key="verdict">Verdict</th><th data-key="layer">Stops at</th>
<th data-key="pool">Pool</th><th data-key="product">Product</th><th data-key="driver">Driver</th>
<th data-key="nvml_gpus">GPUs (NVML)</th><th data-key="allocatable">Allocatable</th>
{% for c in checks %}<th class="check" data-key="check-{{ c.name }}">{{ c.name }}</th>{% endfor %}
</tr></thead><tbody>
{% for t in rows %}
{% set r = t.row %}
<tr data-node="{{ r.node }}" data-verdict="{{ r.verdict }}" data-severity="{{ t.severity }}">
<td data-key="node" data-label="Node" class="nowrap">{% if r.verdict == "fail" %}<a href="#node-{{ r.node }}">
{{- r.node }}</a>{% else %}{{ r.node }}{% endif %}</td>
<td data-key="verdict" data-label="Verdict" data-value="{{ t.rank }}" class="nowrap sev-{{ t.severity }}">
{{- r.verdict }}</td>
<td data-key="layer" data-label="Stops at" data-value="{{ t.rank }}" class="nowrap">
{{- layer_link(r.failing_layer) }}</td>
<td data-key="pool" data-label="Pool" class="nowrap">{{ r.pool or "-" }}</td>
<td data-key="product" data-label="Product">{{ r.product or "-" }}</td>
<td data-key="driver" data-label="Driver" class="nowrap">{{ r.driver_version or "-" }}</td>
<td data-key="nvml_gpus" data-label="GPUs (NVML)">{{ "-" if r.nvml_gpus is none else r.nvml_gpus }}</td>
<td data-key="allocatable" data-label="Allocatable">{{ t.allocatable or "-" }}</td>
{% for c in t.checks %}
<td data-key="check-{{ c.name }}" data-label="{{ c.name }}" data-value="{{ c.outcome }}"
 class="check sev-{{ outcome_severity[c.outcome] }}" aria-label="{{ c.name }}: {{ c.outcome }}">
{{- outcome_glyphs[c.outcome] }}</td>
{% endfor %}
</tr>
{% if r.evidence %}
<tr class="detail" data-detail-of="{{ r.node }}" data-severity="{{ t.severity }}">
<td data-key="evidence" colspan="{{ 8 + checks | length }}"><b>Evidence:</b> {{ r.evidence | join("; ") }}
{%- for f in r.findings[:1] %} <b>Fix:</b> {{ f.fix }}{% endfor %}</td></tr>
{% endif %}
{% endfor %}
</tbody></table></div>

{% if summary.by_owner %}
<h2>Failures by owner</h2>
<div id="owners">
{% for g in summary.by_owner %}
<section data-owner="{{ g.owner }}">
<h3>{{ g.owner }} <span class="muted">({{ g.layers | join(", ") }})</span></h3>
<ul>
{% for f in g.failures %}
<li data-node="{{ f.node }}" data-layer="{{ f.layer }}"><a href="#node-{{ f.node }}">{{ f.node }}</a> at
 {{ layer_link(f.layer) }}: {{ f.evidence or "-" }}<br><span class="muted">Fix:</span> {{ f.fix or "-" }}<br>
<span class="muted">Run:</span> <code>{{ f.command or "-" }}</code></li>
{% endfor %}
</ul></section>
{% endfor %}
</div>
{% endif %}

<h2>Failures</h2>
{% if failing %}
<div id="failures">
{% for r in failing %}
<section id="node-{{ r.node }}" data-node="{{ r.node }}">
<h3>{{ r.node }}: stops at {{ layer_link(r.failing_layer) }}</h3>
<ul>
{% for f in r.findings %}
<li data-layer="{{ f.layer }}"><b>{{ layer_link(f.layer) }}</b> (<a href="#check-{{ f.check }}">{{ f.check }}</a>
 check): {{ f.evidence }}<br><span class="muted">Fix:</span> {{ f.fix }}</li>
{% endfor %}
</ul></section>
{% endfor %}
</div>
{% else %}
<p id="failures">None.</p>
{% endif %}

<h2>Layers</h2>
<dl class="fixes" id="layers">
{% for l in layers %}<dt id="layer-{{ l.name }}" class="mono">{{ l.name }}</dt><dd>{{ l.text }}</dd>
{% endfor %}
</dl>
<h2>Checks</h2>
<dl class="fixes" id="check-list">
{% for c in checks %}<dt id="check-{{ c.name }}" class="mono">{{ c.name }}</dt><dd>{{ c.text }}</dd>
{% endfor %}
</dl>
{% endblock %}
"""
