# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_host
short_description: Run the GPU baseline's host checks over one host's facts
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Evaluates every host check of the GPU baseline (see docs/baseline.md) over a host's
    M(gpuops.gpu_operator.gpu_host_facts) and M(gpuops.gpu_operator.nvidia_gpu_facts) facts, plus the user
    checks the role has templated for that host.
  - Fails naming the bad input when the options are wrong (unknown check ids in C(skip) or C(severity), an
    operator version outside the compatibility matrix, ...).
options:
  _input:
    description: C(gpu_host) and C(nvidia_gpu) facts, and C(user_checks) (user check id to C(failed), C(evidence)).
    type: dict
    required: true
  options:
    description:
      - C(operator_version), C(driver_policy), C(driver_version), C(kernel_module_type), C(use_precompiled),
        C(precompiled_tags), C(cuda_version), C(toolkit_env), C(skip), C(severity), C(user_checks) (the role's
        C(gpu_baseline_*) variables).
    type: dict
    required: true
extends_documentation_fragment:
  - gpuops.gpu_operator.baseline_user_checks
"""

EXAMPLES = r"""
- name: Evaluate this host
  ansible.builtin.set_fact:
    baseline: >-
      {{ {'gpu_host': ansible_facts.gpu_host, 'nvidia_gpu': ansible_facts.nvidia_gpu}
         | gpuops.gpu_operator.baseline_host({'operator_version': 'v26.7.0', 'driver_policy': 'preinstalled'}) }}
"""

RETURN = r"""
_value:
  description:
    - C(results) (one per check - C(id), C(scope), C(severity), C(title), C(status) (V(pass), V(fail),
      V(not_applicable) or V(skipped)), C(evidence), C(fix)), C(findings) (the failed ones) and C(verdict)
      (V(pass), V(warn) or V(fail)).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import evaluate_host  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import BaselineError  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import (  # noqa: E402
    options,
    with_user_checks,
)


def baseline_host(ctx, opts, user_checks=None):
    try:
        return evaluate_host(dict(ctx or {}), options(with_user_checks(opts, user_checks)))
    except BaselineError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule(object):
    def filters(self):
        return {"baseline_host": baseline_host}
