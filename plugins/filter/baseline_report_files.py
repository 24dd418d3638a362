# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_report_files
short_description: The text of baseline.json and baseline.md, unchanged while the baseline's verdicts are
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Renders the result of P(gpuops.gpu_operator.baseline_report#filter) as the two report files, C(json) (the report
    without its Markdown; keys sorted) and C(markdown).
  - "Given the previous C(baseline.json), the files are rendered from the previous report when its verdict record is
    the same - every verdict and count, every check's status and severity, every finding with its evidence and fix,
    the drift and the target. The evidence of a check that passed or did not apply is left out of that comparison:
    it moves with the cluster without changing a verdict (before an install C(RuntimeClass nvidia is absent; the
    operator creates it at install), after it C(RuntimeClass nvidia has handler nvidia)), so a re-run over the same
    fleet rewrites nothing and a task writing the files reports a change only when a verdict or a finding changes."
options:
  _input:
    description: The result of P(gpuops.gpu_operator.baseline_report#filter).
    type: dict
    required: true
  previous:
    description: The previous C(baseline.json), as its text or as a dict; empty, missing or unreadable means none.
    type: raw
seealso:
  - plugin: gpuops.gpu_operator.baseline_report
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the previous report, if any
  ansible.builtin.slurp:
    src: reports/baseline.json
  register: previous
  failed_when: false

- name: Write baseline.json and baseline.md
  ansible.builtin.copy:
    content: "{{ files[item] }}"
    dest: "reports/baseline.{{ 'md' if item == 'markdown' else 'json' }}"
    mode: "0644"
  loop: [json, markdown]
  vars:
    files: >-
      {{ gpu_baseline_report | gpuops.gpu_operator.baseline_report_files(previous.content | default('') | b64decode) }}
"""

RETURN = r"""
_value:
  description: C(json) and C(markdown), the files' text (each ending in a newline).
  type: dict
"""

import copy  # noqa: E402
import json  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import as_document  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.report import markdown  # noqa: E402

#: Statuses whose evidence is informational (not part of the verdict record).
INFORMATIONAL = ("pass", "not_applicable", "skipped")


def _document(report):
    """The report as plain JSON data, without its Markdown."""
    return json.loads(json.dumps({k: v for k, v in report.items() if k != "markdown"}))


def verdict_record(document):
    """What a change of the report is judged by: the document without the printed lines and without the evidence of
    results that passed, did not apply or were skipped."""
    rec = copy.deepcopy({k: v for k, v in document.items() if k != "lines"})
    result_lists = [(rec.get("cluster") or {}).get("results") or []]
    result_lists += [row.get("results") or [] for row in (rec.get("hosts") or {}).values()]
    for results in result_lists:
        for r in results:
            if r.get("status") in INFORMATIONAL:
                r.pop("evidence", None)
    return rec


def baseline_report_files(report, previous=None):
    doc = _document(report)
    before = as_document(previous)
    if before is not None:
        try:
            if verdict_record(before) == verdict_record(doc):
                doc = before
        except (AttributeError, TypeError):  # not a baseline report
            pass
    try:
        md = markdown(doc)
    except (KeyError, TypeError):  # a previous report of another shape: render the new one
        doc = _document(report)
        md = markdown(doc)
    return {"json": json.dumps(doc, indent=4, sort_keys=True, separators=(",", ": ")) + "\n", "markdown": md}


class FilterModule(object):
    def filters(self):
        return {"baseline_report_files": baseline_report_files}
