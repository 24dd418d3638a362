# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_report_json
short_description: Render a fleet validation summary as a versioned JSON report
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - "The report is C({kind, schema_version, generated_at, report}): C(kind) is
    V(gpuops.gpu_operator/validation-report), C(schema_version) is V(1.2) (schema
    C(docs/validate-report.schema.json); a minor version only adds optional fields), and C(report) is the summary
    (its C(rows), C(passed), C(failed), C(failed_by_layer), C(layers) and C(checks); the printed table C(lines) is
    left out)."
  - The timestamp C(generated_at) is outside C(report), the compared content. Given the previous report, an
    unchanged C(report) keeps the previous C(generated_at), so the same fleet gives the same bytes and a task that
    writes the file reports a change only when a verdict, a check or its evidence changes.
  - Keys are sorted; the text ends with a newline.
  - Input is the result of P(gpuops.gpu_operator.fleet_summary#filter).
options:
  generated:
    description: The timestamp of this run, used when the content changed (or no previous report is given).
    type: str
  previous:
    description:
      - The previous report, as its JSON text or as a dict; empty, missing or unreadable means none.
    type: raw
seealso:
  - plugin: gpuops.gpu_operator.fleet_report_html
    plugin_type: filter
  - plugin: gpuops.gpu_operator.fleet_report_markdown
    plugin_type: filter
extends_documentation_fragment:
  - gpuops.gpu_operator.fleet_report.SUMMARY
"""

EXAMPLES = r"""
- name: Read the previous JSON report, if any
  ansible.builtin.slurp:
    src: reports/gpu-validate.json
  register: previous_report
  failed_when: false

- name: JSON report (the timestamp moves only when the content changes)
  ansible.builtin.set_fact:
    report_json: >-
      {{ fleet | gpuops.gpu_operator.fleet_report_json(
           generated=now(utc=true, fmt='%Y-%m-%dT%H:%M:%SZ'),
           previous=(previous_report.content | default('') | b64decode)) }}

- name: Write it
  ansible.builtin.copy:
    content: "{{ report_json }}"
    dest: reports/gpu-validate.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The report as JSON text.
  type: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report_json import (  # noqa: E402
    render_json,
    report_document,
)


def _fleet_report_json(summary, generated=None, previous=None):
    return render_json(report_document(summary, generated, previous))


class FilterModule(object):
    def filters(self):
        return {"fleet_report_json": _fleet_report_json}
