# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options of the validation report filters that print a page (Markdown, HTML).
    DOCUMENTATION = r"""
options:
  title:
    description: The report's heading (and the HTML page's title).
    type: str
    default: GPU validation report
  generated:
    description:
      - A timestamp printed under the heading; omitted when not given.
      - To print the same timestamp as the JSON report, pass its C(generated_at) (see
        P(gpuops.gpu_operator.fleet_report_json#filter)).
    type: str
"""

    # The input of every validation report filter.
    SUMMARY = r"""
options:
  _input:
    description: The result of P(gpuops.gpu_operator.fleet_summary#filter).
    type: dict
    required: true
"""
