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

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

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


#: Who acts on a failure at each layer (the default routes; ``gpu_validate_routes`` and ``gpu_triage_info``'s
#: ``routes`` override them layer by layer). The node/OS team owns what is installed on the host and the hardware;
#: the platform team owns what runs in the cluster for every tenant (the operator's operands, DRA, MIG layouts, the
#: scheduler, priority classes, monitoring); a tenant's namespace admins own their quota and queues.
DEFAULT_ROUTES = {
    "driver": "node-os-team",
    "node": "node-os-team",
    "toolkit": "node-os-team",
    "device-plugin": "platform-team",
    "dra": "platform-team",
    "gpu-health": "node-os-team",
    "mig": "platform-team",
    "scheduling": "platform-team",
    "quota": "namespace-admins",
    "preemption": "platform-team",
    "queue": "namespace-admins",
    "workload": "platform-team",
    "monitoring": "platform-team",
}


def merged_routes(overrides=None):
    """:data:`DEFAULT_ROUTES` with ``overrides`` (layer -> owner) on top; an unknown layer or an empty owner raises
    ArgumentError naming it."""
    routes = dict(DEFAULT_ROUTES)
    for layer, owner in (overrides or {}).items():
        if layer not in LAYERS:
            raise ArgumentError("routes: unknown layer %r; route one of %s" % (layer, ", ".join(LAYERS)))
        if not isinstance(owner, str) or not owner.strip():
            raise ArgumentError("routes: the owner of layer %s must be a non-empty string, got %r" % (layer, owner))
        routes[layer] = owner.strip()
    return routes


def owner_of(layer, routes=None):
    """Who acts on a failure at ``layer`` under ``routes`` (layer -> owner, over :data:`DEFAULT_ROUTES`); None for
    no layer, ``unrouted`` for a layer no route names."""
    if not layer:
        return None
    return (routes or DEFAULT_ROUTES).get(layer) or DEFAULT_ROUTES.get(layer) or "unrouted"
