# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: baseline_options
short_description: Validate the GPU baseline's options and list its checks
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Validates the options of P(gpuops.gpu_operator.baseline_host#filter) and fails naming every unknown check id
    in C(skip) or C(severity), a bad severity, a user check without an id or with a taken id, an operator
    version outside the compatibility matrix, an unknown driver policy or install mode, or GPUCluster mode on a
    release without it.
  - Returns the check catalogue (id, scope, severity after overrides, title) of the checks that run in the
    install mode C(operator_mode) (the DRA prerequisites only in V(gpucluster)), the skipped ids and the
    compatibility release row used.
options:
  _input:
    description: The options (the role's C(gpu_baseline_*) variables without the prefix).
    type: dict
    required: true
extends_documentation_fragment:
  - gpuops.gpu_operator.baseline_user_checks
"""

EXAMPLES = r"""
- name: Fail early on a typo in the skip list
  ansible.builtin.set_fact:
    checks: "{{ {'skip': ['nouveau.loaded']} | gpuops.gpu_operator.baseline_options }}"
"""

RETURN = r"""
_value:
  description: C(checks) (id, scope, severity, title), C(skip), C(release) (the compatibility row) and C(target_driver).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.facts import target_driver  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import BaselineError  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import (  # noqa: E402
    REGISTRY,
    catalogue,
    options,
    with_user_checks,
)


def baseline_options(raw, user_checks=None):
    try:
        opts = options(with_user_checks(raw, user_checks))
    except BaselineError as exc:
        raise AnsibleFilterError(str(exc)) from None
    checks = [
        dict(c, severity=opts["severity"].get(c["id"], c["severity"]))
        for c in catalogue()
        if REGISTRY[c["id"]].applies(opts["operator_mode"])
    ]
    checks += [
        {
            "id": u["id"],
            "scope": u.get("scope") or "host",
            "severity": opts["severity"].get(u["id"], u.get("severity", "fail")),
            "title": u.get("description") or u["id"],
        }
        for u in opts["user_checks"]
    ]
    return {"checks": checks, "skip": opts["skip"], "release": opts["release"], "target_driver": target_driver(opts)}


class FilterModule(object):
    def filters(self):
        return {"baseline_options": baseline_options}
