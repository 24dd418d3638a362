# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The MIG check: the layout a node asks for is applied and advertised with the resources it should give."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import mig_enabled
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import finding

#: Uniform MIG profiles ``<g>g.<m>gb``: instances per GPU by compute slices (A100/H100 class GPUs).
UNIFORM_MIG_PER_GPU = {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}
_UNIFORM_CONFIG = re.compile(r"^all-(\d)g\.(\d+)gb$")


def expected_mig_resources(node, gpu_count, layouts=None):
    """``{resource: count}`` the node should advertise for its ``nvidia.com/mig.config``, or None if unknown.

    ``layouts`` maps a config name to instances per GPU by profile (``{"all-balanced": {"1g.10gb": 2, ...}}``);
    uniform configs ``all-<g>g.<m>gb`` are derived. The strategy label decides the resource names: ``single``
    advertises every instance as ``nvidia.com/gpu``, ``mixed`` as ``nvidia.com/mig-<profile>``.
    """
    mig = (node.get("gpu") or {}).get("mig") or {}
    config = mig.get("config")
    per_gpu = (layouts or {}).get(config)
    if per_gpu is None:
        m = _UNIFORM_CONFIG.match(config or "")
        if not m or int(m.group(1)) not in UNIFORM_MIG_PER_GPU:
            return None
        per_gpu = {"%sg.%sgb" % (m.group(1), m.group(2)): UNIFORM_MIG_PER_GPU[int(m.group(1))]}
    if (mig.get("strategy") or "single") == "mixed":
        return {"nvidia.com/mig-%s" % prof: int(n) * gpu_count for prof, n in per_gpu.items()}
    return {"nvidia.com/gpu": sum(int(n) for n in per_gpu.values()) * gpu_count}


def check_mig(nvml, node, layouts=None, advertised=True):
    """A finding when the MIG config the node asks for failed to apply or (``advertised``: extended resources, not
    DRA devices) its resources are not advertised."""
    if not mig_enabled(node):
        return []
    mig = node["gpu"]["mig"]
    if mig.get("config_state") != "success":
        return [
            finding(
                "mig",
                "mig",
                "nvidia.com/mig.config=%s but nvidia.com/mig.config.state=%s"
                % (mig.get("config"), mig.get("config_state")),
                "Read the mig-manager pod's log on this node; check that the config exists in its ConfigMap and that "
                "no GPU process blocks the change.",
            )
        ]
    count = nvml.get("gpu_count") or (node.get("gpu") or {}).get("count") or 0
    want = expected_mig_resources(node, count, layouts) if advertised else None
    if want is None:
        return []
    have = node.get("allocatable") or {}
    wrong = {res: (n, have.get(res, 0)) for res, n in want.items() if have.get(res, 0) != n}
    if not wrong:
        return []
    return [
        finding(
            "mig",
            "mig",
            "MIG config %s (%s strategy) should advertise %s; the node advertises %s"
            % (
                mig.get("config"),
                mig.get("strategy") or "single",
                ", ".join("%s=%d" % (r, w) for r, (w, _h) in sorted(wrong.items())),
                ", ".join("%s=%s" % (r, h) for r, (_w, h) in sorted(wrong.items())),
            ),
            "Check the device plugin's MIG strategy against the ClusterPolicy's mig.strategy and restart the device "
            "plugin pod.",
        )
    ]
