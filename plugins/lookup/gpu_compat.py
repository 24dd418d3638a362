# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_compat
short_description: Read the collection's GPU Operator compatibility matrix
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - Returns rows of the curated, versioned compatibility matrix shipped in the collection
    (C(plugins/module_utils/_operator/compat_data.py), every row citing its source).
  - "O(kind=release): for each term (an operator version such as V(v26.7.0) or V(25.10)), the release row:
    C(kubernetes) and C(containerd) ranges, C(os), C(default_driver), C(chart_default_driver), C(drivers),
    C(recommended_drivers), C(driver_branches) (the branches a preinstalled driver may be on, each with its
    C(minimum), C(designation), C(long_term) and the release's C(drivers) on it), C(latest_patch) where known,
    C(dra_driver) (the DRA driver GPUCluster mode deploys, V(null) before 26.7), C(source) and more."
  - "O(kind=cuda): for each term (a CUDA V(major.minor)), the minimum driver."
  - "O(kind=kernel_module): for each term (a GPU architecture), C(module) (V(open), V(proprietary) or V(any)),
    C(required) and C(source)."
  - "O(kind=matrix): the whole matrix (terms are ignored)."
  - An operator version or CUDA version outside the matrix is an error naming the known ones.
options:
  _terms:
    description: Operator versions, CUDA versions or architectures, depending on O(kind).
    type: list
    elements: str
  kind:
    description: What the terms are.
    type: str
    choices: [release, cuda, kernel_module, matrix]
    default: release
"""

EXAMPLES = r"""
- name: Kubernetes range of the target release
  ansible.builtin.debug:
    msg: "{{ lookup('gpuops.gpu_operator.gpu_compat', 'v26.7.0').kubernetes }}"

- name: Minimum driver for CUDA 12.8
  ansible.builtin.debug:
    msg: "{{ lookup('gpuops.gpu_operator.gpu_compat', '12.8', kind='cuda') }}"
"""

RETURN = r"""
_raw:
  description: One entry per term (a dict for V(release), V(kernel_module) and V(matrix), a string for V(cuda)).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat  # noqa: E402

KINDS = ("release", "cuda", "kernel_module", "matrix")


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        kind = kwargs.get("kind", "release")
        if kind not in KINDS:
            raise AnsibleLookupError("gpu_compat: kind=%r; use one of %s" % (kind, ", ".join(KINDS)))
        try:
            if kind == "matrix":
                return [compat.matrix()]
            if kind == "cuda":
                return [compat.min_driver_for_cuda(t) for t in terms]
            if kind == "kernel_module":
                return [compat.kernel_module(t) for t in terms]
            return [compat.release(t) for t in terms]
        except compat.CompatError as exc:
            raise AnsibleLookupError(str(exc)) from None
