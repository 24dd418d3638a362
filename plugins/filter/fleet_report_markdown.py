# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_report_markdown
short_description: Render a fleet validation summary as a Markdown report
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Totals, the failing layers, one table row per node with the outcome of every check, then each failing node's
    findings with evidence and fix.
  - Input is the result of P(gpuops.gpu_operator.fleet_summary#filter).
extends_documentation_fragment:
  - gpuops.gpu_operator.fleet_report
  - gpuops.gpu_operator.fleet_report.SUMMARY
"""

EXAMPLES = r"""
- name: Markdown report
  ansible.builtin.copy:
    content: "{{ fleet | gpuops.gpu_operator.fleet_report_markdown(generated=now(utc=true).isoformat()) }}"
    dest: reports/gpu-validate.md
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The report, Markdown text ending in a newline.
  type: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report import summary_markdown  # noqa: E402


def _fleet_report_markdown(summary, title="GPU validation report", generated=None):
    return summary_markdown(summary, title=title, generated=generated)


class FilterModule(object):
    def filters(self):
        return {"fleet_report_markdown": _fleet_report_markdown}
