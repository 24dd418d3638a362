# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_report
short_description: The GPU baseline report - host results, cluster checks, drift per pool, Markdown
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Joins each host's baseline (from P(gpuops.gpu_operator.baseline_host#filter), or computed here from its
    facts) with the cluster checks over M(gpuops.gpu_operator.gpu_preflight_info)'s result, adds the fleet
    drift per pool and renders the report as Markdown.
  - A cluster finding about a host (for example a host without a node) is added to that host's findings.
options:
  _input:
    description:
      - Hosts by inventory name, each with C(node_name), C(pool), C(gpu_host), C(nvidia_gpu), C(gpu_node_labels),
        C(gpu_node_taints) and optionally C(baseline) (the host's own result).
    type: dict
    required: true
  cluster:
    description: M(gpuops.gpu_operator.gpu_preflight_info)'s result; C(access) may list several identities.
    type: dict
    required: true
  options:
    description: The same options as P(gpuops.gpu_operator.baseline_host#filter).
    type: dict
    required: true
extends_documentation_fragment:
  - gpuops.gpu_operator.baseline_user_checks
"""

EXAMPLES = r"""
- name: Build the report
  ansible.builtin.set_fact:
    report: "{{ hosts_facts | gpuops.gpu_operator.baseline_report(preflight, {'operator_version': 'v26.7.0'}) }}"
"""

RETURN = r"""
_value:
  description:
    - C(hosts) (per host - C(node), C(pool), C(verdict), C(results), C(findings)), C(cluster) (C(results),
      C(findings), C(verdict)), C(drift) (per pool and dimension, the hosts per value), C(counts) (hosts per
      verdict), C(verdict), C(operator_version), C(release), C(data_version), C(driver_policy), C(target_driver)
      and C(markdown).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import BaselineError  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import with_user_checks  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.report import markdown, report  # noqa: E402


def baseline_report(hosts, cluster, opts, user_checks=None):
    try:
        rep = report(dict(hosts or {}), cluster, with_user_checks(opts, user_checks))
    except BaselineError as exc:
        raise AnsibleFilterError(str(exc)) from None
    rep["markdown"] = markdown(rep)
    return rep


class FilterModule(object):
    def filters(self):
        return {"baseline_report": baseline_report}
