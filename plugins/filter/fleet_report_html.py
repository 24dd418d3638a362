# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_report_html
short_description: Render a fleet validation summary as a self-contained HTML report
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - One HTML page with no external asset (inline CSS, JavaScript and SVG; nothing is fetched), rendered from a Jinja2
    template with autoescape, so every value is escaped.
  - "It shows the totals; a picture of where each failing node stops (one row per failing node, one column per layer:
    the stop, the layers below it that passed, the higher layers that fail too) with a legend; the driver versions per
    pool; a table of every node with the outcome of each check (failing nodes first, lowest layer first; sortable by
    clicking a column; it scrolls under sticky headers); each failing node's findings with evidence and fix; and what
    each layer and check means, linked from the layer and check names."
  - Input is the result of P(gpuops.gpu_operator.fleet_summary#filter). The same input gives the same bytes.
seealso:
  - plugin: gpuops.gpu_operator.fleet_report_json
    plugin_type: filter
  - plugin: gpuops.gpu_operator.fleet_report_markdown
    plugin_type: filter
extends_documentation_fragment:
  - gpuops.gpu_operator.fleet_report
  - gpuops.gpu_operator.fleet_report.SUMMARY
"""

EXAMPLES = r"""
- name: HTML report
  ansible.builtin.copy:
    content: "{{ fleet | gpuops.gpu_operator.fleet_report_html(generated=(report_json | from_json).generated_at) }}"
    dest: reports/gpu-validate.html
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The report, one HTML document ending in a newline.
  type: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.html_page import render_html  # noqa: E402


def _fleet_report_html(summary, title="GPU validation report", generated=None):
    return render_html(summary, title=title, generated=generated)


class FilterModule(object):
    def filters(self):
        return {"fleet_report_html": _fleet_report_html}
