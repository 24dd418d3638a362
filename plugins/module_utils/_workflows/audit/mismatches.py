# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Where a host and its cluster disagree: the node, the GPU count, the MIG mode, the driver version."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import dra_only


def mismatches(facts, node, node_expected):
    """Host against cluster: node missing, NVML GPU count against allocatable (not on a node whose GPUs reach pods
    through DRA only: it advertises no extended resource; ``dra`` compares its published devices), MIG mode against
    the node's ``all-*`` MIG config label, host driver against the driver label."""
    out = []
    if facts is None:
        return out
    if node is None:
        if node_expected:
            out.append(
                {
                    "kind": "node_missing",
                    "host_value": None,
                    "cluster_value": None,
                    "evidence": "no GPU node of this name in the cluster; set k8s_node_name or check the node joined",
                }
            )
        return out
    alloc = node.get("allocatable") or {}
    mig_alloc = sum(v for k, v in alloc.items() if k.startswith("nvidia.com/mig-") and isinstance(v, int))
    count = facts.get("gpu_count")
    allocatable = alloc.get("nvidia.com/gpu", 0)
    compared = facts.get("nvml_available") and not mig_alloc and not facts.get("mig_enabled") and not dra_only(node)
    if compared and allocatable != count:
        out.append(
            {
                "kind": "gpu_count_vs_allocatable",
                "host_value": count,
                "cluster_value": allocatable,
                "evidence": "NVML counts %s GPUs, the node advertises nvidia.com/gpu=%s" % (count, allocatable),
            }
        )
    config = ((node.get("gpu") or {}).get("mig") or {}).get("config")
    if facts.get("nvml_available") and facts.get("gpu_count") and config and config.startswith("all-"):
        mig_on = facts.get("mig_enabled")
        wants_mig = config != "all-disabled"
        if mig_on != wants_mig or (wants_mig and not facts.get("mig_all")):
            out.append(
                {
                    "kind": "mig_vs_label",
                    "host_value": facts.get("mig_nvml"),
                    "cluster_value": config,
                    "evidence": "node label nvidia.com/mig.config=%s, NVML %s" % (config, facts.get("mig_nvml")),
                }
            )
    label = (node.get("gpu") or {}).get("driver_version")
    if facts.get("driver") and label and facts["driver"] != label:
        out.append(
            {
                "kind": "driver_vs_label",
                "host_value": facts["driver"],
                "cluster_value": label,
                "evidence": "host driver %s, node label nvidia.com/cuda.driver-version %s" % (facts["driver"], label),
            }
        )
    return out
