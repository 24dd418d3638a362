# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The one layer vocabulary of validation, triage, audit and the reports.

A GPU node is checked layer by layer, in the order below: each layer rests on the ones before it, so the first
failing layer is where to look. Every workflow uses a subset of these names, in this order.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: Every layer, bottom to top, with what it covers.
LAYER_DESCRIPTIONS = (
    ("driver", "the NVIDIA kernel driver (host-installed or the operator's driver container)"),
    ("node", "the node itself: Ready, not cordoned, GPU labels"),
    ("toolkit", "the NVIDIA container toolkit and runtime handler (or CDI / NRI), and the operator validator"),
    ("device-plugin", "the device plugin and the extended resources the node advertises (nvidia.com/gpu)"),
    ("dra", "the DRA driver: its kubelet plugin, the node's ResourceSlices, the DeviceClass, device taints"),
    ("gpu-health", "the GPUs' own health: XID errors, ECC, thermals, lost GPUs"),
    ("mig", "the MIG layout asked for and the one applied"),
    ("scheduling", "the scheduler: taints, selectors, affinity, resources, scheduler names"),
    ("quota", "ResourceQuota and LimitRange of the pod's namespace"),
    ("preemption", "priority classes and preemption"),
    ("queue", "batch queues (Kueue, Volcano)"),
    ("workload", "a GPU workload actually runs (a smoke pod)"),
    ("monitoring", "the DCGM exporter and its metrics"),
)

#: The layer names, bottom to top.
LAYERS = tuple(name for name, _d in LAYER_DESCRIPTIONS)


def layer_rank(layer):
    """Position of ``layer`` in :data:`LAYERS` (unknown layers sort last)."""
    try:
        return LAYERS.index(layer)
    except ValueError:
        return len(LAYERS)


def in_layer_order(names):
    """``names`` (a subset of :data:`LAYERS`) as a tuple in layer order; an unknown name raises ValueError."""
    unknown = [n for n in names if n not in LAYERS]
    if unknown:
        raise ValueError("unknown layer(s): %s (known: %s)" % (", ".join(unknown), ", ".join(LAYERS)))
    return tuple(sorted(names, key=LAYERS.index))
