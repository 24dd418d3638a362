# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The audit report's Jinja2 template (rendered with autoescape by ``_core.html.render``; see ``html_page``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

TEMPLATE = """{% extends "page.html" %}
{% import "macros.html" as m %}
{% macro code_link(code) %}<a class="code" href="#fix-{{ code }}">{{ code }}</a>{% endmacro %}
{% block subtitle %}Generated {{ snap.generated_at }} &middot; snapshot schema {{ snap.schema_version }}{% endblock %}
{% block body %}
<section class="cards" id="summary">
<div class="card"><b data-k="clusters">{{ s.clusters }}</b>
<span>clusters ({{ s.clusters_failed }} failed to answer)</span></div>
<div class="card"><b data-k="hosts">{{ s.hosts }}</b>
<span>hosts (ok {{ s.statuses.ok }}, failed {{ s.statuses.failed }},
 not audited {{ s.statuses.not_audited }})</span></div>
<div class="card{{ ' sev-critical' if s.statuses.unreachable }}">
<b data-k="unreachable">{{ s.statuses.unreachable }}</b>
<span>unreachable hosts</span></div>
<div class="card"><b data-k="not_in_inventory">{{ s.statuses.not_in_inventory }}</b>
<span>GPU nodes without a host</span></div>
<div class="card"><b data-k="gpus">{{ s.gpus }}</b><span>GPUs (NVML)</span></div>
<div class="card{{ ' sev-critical' if s.gpus_critical }}"><b data-k="gpus_critical">{{ s.gpus_critical }}</b>
<span>critical GPUs</span></div>
<div class="card{{ ' sev-warning' if s.gpus_warning }}"><b data-k="gpus_warning">{{ s.gpus_warning }}</b>
<span>warning GPUs</span></div>
<div class="card"><b data-k="findings">{{ s.findings }}</b><span>health findings</span></div>
<div class="card"><b data-k="mismatches">{{ s.mismatches }}</b><span>host/cluster mismatches</span></div>
<div class="card"><b data-k="drift">{{ s.drift }}</b><span>drifting fields</span></div>
{% if dra %}
<div class="card"><b data-k="dra_nodes">{{ dra | length }}</b><span>nodes using DRA</span></div>
{% endif %}
</section>
{{ m.legend(legend) }}

<h2>Driver and CUDA versions per pool</h2>
<figure><figcaption>One bar per field, split by version, a node per unit: blue is the pool's majority, other
colours differ from it, grey is unknown. Hover a segment for its nodes.</figcaption>
{{ m.version_chart(versions, "versions") }}</figure>

<h2>GPU health per host</h2>
<p class="muted">One square per GPU, coloured by severity (see the legend); the reasons of every GPU that is not
ok are under Health findings (a square's tooltip repeats them). A grey dashed bar is a host that gave no GPU
data.</p>
<div class="pictures" id="health-grid">
{% for g in grids %}
<figure data-pool="{{ g.label }}"><figcaption>{{ g.label }}</figcaption>
<svg role="img" aria-label="GPU health of {{ g.label }}" width="{{ g.width }}" height="{{ g.height }}"
 viewBox="0 0 {{ g.width }} {{ g.height }}">
{% for h in g.hosts %}
<text x="0" y="{{ h.y + 13 }}" font-size="12">{{ h.node }}</text>
{% for q in h.squares %}
<g class="gpu" data-id="{{ h.id }}" data-gpu="{{ q.index }}" data-severity="{{ q.severity }}">
<title>{{ q.tooltip }}</title>
<rect x="{{ q.x }}" y="{{ q.y }}" width="{{ g.square }}" height="{{ g.square }}" rx="2" fill="{{ fills[q.severity] }}"/>
{% if q.severity != "ok" %}
<text x="{{ q.x + g.square / 2 }}" y="{{ q.y + 13 }}" font-size="11" font-weight="700" text-anchor="middle"
 fill="#fff">{{ glyphs[q.severity] }}</text>
{% endif %}
</g>
{% endfor %}
{% if h.missing %}
<g class="gpu-missing" data-id="{{ h.id }}"><title>{{ h.id }}: {{ h.missing }}</title>
<rect x="{{ g.label_width }}" y="{{ h.y }}" width="{{ g.width - g.label_width - 4 }}" height="{{ g.square }}"
 fill="#eef0f2" stroke="#80868b" stroke-dasharray="4 3"/>
<text x="{{ g.label_width + 6 }}" y="{{ h.y + 13 }}" font-size="11" fill="#3c4043">{{ h.missing }}</text></g>
{% endif %}
{% endfor %}
</svg></figure>
{% endfor %}
</div>

<h2>Clusters</h2>
<table id="clusters"><thead><tr><th>Cluster</th><th>Status</th><th>Kubernetes</th><th>ClusterPolicy</th>
<th>Operator driver</th><th>GPU nodes</th><th>Allocatable</th><th>Error</th></tr></thead><tbody>
{% for c in snap.clusters %}
<tr><td>{{ c.name }}</td><td class="{{ 'sev-ok' if c.status == 'ok' else 'sev-critical' }}">{{ c.status }}</td>
<td>{{ text(c.kubernetes_version) }}</td><td>{{ text(c.cluster_policy_state) }}</td>
<td>{{ text(c.operator_driver_version) }}</td><td>{{ c.gpu_nodes }}</td><td>{{ text(c.gpu_allocatable) }}</td>
<td>{{ text(c.error) }}</td></tr>
{% endfor %}
</tbody></table>

<h2>Health heat map</h2>
<p class="muted">The worst severity per pool and category, and how many GPUs it affects.</p>
<table id="heatmap"><thead><tr><th>Cluster</th><th>Pool</th><th>Nodes</th><th>GPUs</th><th>Degraded</th>
{% for t in categories %}<th>{{ t }}</th>{% endfor %}</tr></thead><tbody>
{% for p in heat %}
<tr><td>{{ p.cluster }}</td><td>{{ p.pool }}</td><td>{{ p.nodes }}</td><td>{{ p.gpus }}</td>
<td>{{ p.gpus_degraded }}</td>
{% for c in p.cells %}
<td class="sev-{{ c.severity }}" data-category="{{ c.category }}" data-severity="{{ c.severity }}">{{ c.text }}</td>
{% endfor %}
</tr>
{% endfor %}
</tbody></table>

<h2>Drift</h2>
{% if drift %}
<table id="drift"><thead><tr><th>Cluster</th><th>Pool</th><th>Field</th><th>Majority</th><th>Outliers</th>
<th>Values</th></tr></thead><tbody>
{% for p, d in drift %}
<tr><td>{{ p.cluster }}</td><td>{{ p.pool }}</td><td>{{ d.field }}</td><td>{{ d.majority }}</td>
<td class="drift">{{ d.outliers | join(", ") }}</td>
<td>{% for v in d["values"] %}{{ v.value }}: {{ v.nodes | join(", ") }}{{ "; " if not loop.last }}{% endfor %}</td></tr>
{% endfor %}
</tbody></table>
{% else %}
<p id="drift">No drift: every pool agrees on {{ drift_fields }}.</p>
{% endif %}
{% if dra %}

<h2>DRA</h2>
<p class="muted">Nodes whose GPUs reach pods through Dynamic Resource Allocation: what their DRA driver publishes
and how it compares with NVML on the host.</p>
<div class="scroll"><table id="dra"><thead><tr>
{% for key, title in dra_columns %}<th data-key="{{ key }}">{{ title }}</th>{% endfor %}
</tr></thead><tbody>
{% for d in dra %}
<tr data-id="{{ d.node }}">
{% for key, _title in dra_columns %}
{% if key == "drift" %}
<td data-key="drift" class="nowrap{{ ' sev-warning' if d.drift }}">
{%- for kind in d.drift %}{{ code_link(kind) }}{{ ", " if not loop.last }}{% else %}-{% endfor %}</td>
{% elif key == "problems" %}
<td data-key="problems" class="wide{{ ' sev-warning' if d.problems }}">{{ text(d.problems) }}</td>
{% else %}
<td data-key="{{ key }}" class="nowrap">{{ text(d[key]) }}</td>
{% endif %}
{% endfor %}
</tr>
{% endfor %}
</tbody></table></div>
{% for name, problem in dra_cluster_problems %}
<p class="sev-warning" data-cluster="{{ name }}">{{ name }}: {{ problem }}</p>
{% endfor %}
{% endif %}

<h2>Health findings</h2>
{% if findings %}
<table id="findings"><thead><tr><th>Node</th><th>GPU</th><th>Severity</th><th>Code</th><th>Evidence</th></tr></thead>
<tbody>
{% for f in findings %}
<tr data-id="{{ f.id }}"><td class="nowrap">{{ f.id }}</td><td>{{ text(f.gpu) }}</td>
<td class="sev-{{ f.severity }}">{{ f.severity }}</td><td class="nowrap">{{ code_link(f.reason) }}</td>
<td>{{ f.evidence }}</td></tr>
{% endfor %}
</tbody></table>
{% else %}
<p id="findings">None: every GPU that answered is healthy.</p>
{% endif %}

<h2>Mismatches</h2>
{% if mismatches %}
<table id="mismatches"><thead><tr><th>Node</th><th>Kind</th><th>Host</th><th>Cluster</th><th>Evidence</th></tr>
</thead><tbody>
{% for mm in mismatches %}
<tr data-id="{{ mm.id }}"><td class="nowrap">{{ mm.id }}</td><td class="nowrap">{{ code_link(mm.kind) }}</td>
<td>{{ text(mm.host_value) }}</td><td>{{ text(mm.cluster_value) }}</td><td>{{ mm.evidence }}</td></tr>
{% endfor %}
</tbody></table>
{% else %}
<p id="mismatches">None: every host agrees with its node.</p>
{% endif %}

<h2>Fixes</h2>
{% if fixes %}
<dl class="fixes" id="fixes">
{% for x in fixes %}
<dt id="fix-{{ x.code }}" class="mono">{{ x.code }}</dt><dd>{{ x.fix }}</dd>
{% endfor %}
</dl>
{% else %}
<p id="fixes">Nothing to fix.</p>
{% endif %}

<h2>Changes since the baseline</h2>
<ul id="changes">
{% for line in changes %}<li>{{ line }}</li>
{% endfor %}
</ul>

<h2>Fleet</h2>
<p class="muted">Worst rows first. Click a column to sort (again to reverse). Highlighted cells differ from their
pool's majority; codes link to their fix.</p>
{{ m.row_filter(rows, filter_from, "rows that are not ok (degraded, failing, unknown)") }}
<div class="scroll"><table id="fleet" class="sortable stack"><thead><tr>
{% for key, title in columns %}<th data-key="{{ key }}">{{ title }}</th>{% endfor %}
</tr></thead><tbody>
{% for r in rows %}
<tr data-id="{{ r.id }}" data-status="{{ r.status }}" data-severity="{{ r.severity }}">
{% for c in r.cells %}
{% if c.key == "severity" %}
<td data-key="severity" data-label="{{ c.label }}" data-value="{{ r.rank }}" class="nowrap sev-{{ r.severity }}">
{{- r.severity }}</td>
{% elif c.key == "status" and r.status_link %}
<td data-key="status" data-label="{{ c.label }}" class="{{ c.cls }}"><a href="#fix-{{ r.status }}">{{ c.text }}</a></td>
{% elif c.key == "issues" and r.issues %}
<td data-key="issues" data-label="{{ c.label }}" class="{{ c.cls }}">
{%- for i in r.issues %}{{ i.before }}{% if i.code %}{{ code_link(i.code) }}{% endif %}{{ i.after }}
{{- "; " if not loop.last }}{% endfor %}</td>
{% else %}
<td data-key="{{ c.key }}" data-label="{{ c.label }}" class="{{ c.cls }}">{{ c.text }}</td>
{% endif %}
{% endfor %}
</tr>
{% endfor %}
</tbody></table></div>
{% endblock %}
"""
