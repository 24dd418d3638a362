# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The DRA checks of a node whose GPUs reach pods through DRA (the GPU Operator's GPUCluster mode): the node's
``dra`` layer as the shared judgement (``_operator.node_judgement``) finds it, each finding under the check that
covers it, in the order the scheduler depends on them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import judge_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import Context
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import judged_finding

#: The DRA checks in order, and the judgement's codes each one covers.
CHECK_CODES = (
    ("dra-plugin", ("DraPluginMissing", "DraPluginNotReady")),
    ("dra-slices", ("NoResourceSlice", "PoolIncomplete", "StaleSlices", "DeviceClassMissing")),
    ("dra-devices", ("DevicesNotAsNVML",)),
    ("dra-taints", ("DeviceTainted",)),
)


def dra_checks(nvml, node, dra_summary=None):
    """``[(check, findings), ...]`` in :data:`CHECK_CODES` order; ``dra_summary``: gpu_cluster_info's cluster-wide
    ``dra`` (its missing DeviceClasses fail every node using DRA); NVML facts that did not answer compare nothing."""
    context = Context(classes_missing=(dra_summary or {}).get("device_classes_missing") or ())
    judged = judge_dra(node, nvml or {}, context)
    return [
        (
            check,
            [judged_finding(check, j) for j in judged if j["code"] in codes],
        )
        for check, codes in CHECK_CODES
    ]
