# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_failure
short_description: The reason a play should fail for a fleet validation summary, or an empty string
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Applies a failure policy to the result of P(gpuops.gpu_operator.fleet_summary#filter) and returns the message
    naming every failing node and its layer, or an empty string when the play should go on.
options:
  _input:
    description: The result of P(gpuops.gpu_operator.fleet_summary#filter).
    type: dict
    required: true
  fail_on:
    description:
      - V(any) - any failing node; V(never) - never; V(layers) - a node failing at one of O(layers).
    type: str
    choices: [any, never, layers]
    default: any
  layers:
    description: The layers that fail the play with O(fail_on=layers).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Fail when a node is broken below the monitoring layer
  ansible.builtin.fail:
    msg: "{{ fleet | gpuops.gpu_operator.fleet_failure('layers', ['driver', 'toolkit', 'device-plugin']) }}"
  when: fleet | gpuops.gpu_operator.fleet_failure('layers', ['driver', 'toolkit', 'device-plugin']) | length > 0
"""

RETURN = r"""
_value:
  description: The failure message, or an empty string.
  type: str
"""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import should_fail  # noqa: E402


def _fleet_failure(summary, fail_on="any", layers=None):
    return should_fail(summary, fail_on, layers) or ""


class FilterModule(object):
    def filters(self):
        return {"fleet_failure": _fleet_failure}
