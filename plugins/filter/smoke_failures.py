# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: smoke_failures
short_description: Every node that did not pass in a list of gpu_smoke_test results, as lines of text
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - "Reads the RV(gpuops.gpu_operator.gpu_smoke_test#module:nodes) of each M(gpuops.gpu_operator.gpu_smoke_test)
    result and returns a line C(<node>: <status> (<reason>)) for every node whose status is not V(passed), in the
    order of the results and of their nodes."
  - Results without C(nodes) (a skipped task, a failed run, check mode) are left out.
options:
  _input:
    description:
      - Registered M(gpuops.gpu_operator.gpu_smoke_test) results, for example a single result and the C(results)
        of a loop, joined into one list.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Fail when a smoke pod or test workload did not pass
  ansible.builtin.fail:
    msg: "{{ ([smoke] + workloads.results) | gpuops.gpu_operator.smoke_failures | join('; ') }}"
  when: ([smoke] + workloads.results) | gpuops.gpu_operator.smoke_failures | length > 0
"""

RETURN = r"""
_value:
  description: One line per node that did not pass; empty when every node passed.
  type: list
  elements: str
"""

from collections.abc import Mapping  # noqa: E402


def smoke_failures(runs):
    out = []
    for run in runs or []:
        nodes = run.get("nodes") if isinstance(run, Mapping) else None
        if not isinstance(nodes, Mapping):
            continue
        for name, r in nodes.items():
            if r.get("status") != "passed":
                out.append("%s: %s (%s)" % (name, r.get("status"), r.get("reason") or ""))
    return out


class FilterModule(object):
    def filters(self):
        return {"smoke_failures": smoke_failures}
