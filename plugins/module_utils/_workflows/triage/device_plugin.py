# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``device-plugin`` layer: what a GPU node advertises to the scheduler, and why not (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    is_gpu_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    event_evidence,
    finding,
)


def device_plugin_findings(node, view, managed, node_events, operator_namespace):
    """Findings for a GPU node that advertises no GPUs, or fewer than it has (unhealthy, with its Xid events).

    ``view`` is the node's view with ``requested``; ``managed``: a ClusterPolicy deploys the device plugin;
    ``node_events``: the node's events.
    """
    name = name_of(node)
    expected = view["gpu"]["count"] if isinstance(view["gpu"]["count"], int) else None
    cap_gpu = view["capacity"].get(GPU_RESOURCE) or 0
    alloc_gpu = view["allocatable"].get(GPU_RESOURCE) or 0
    mig_cap = sum(v for k, v in view["capacity"].items() if k.startswith(MIG_RESOURCE_PREFIX) and isinstance(v, int))
    advertised = (cap_gpu if isinstance(cap_gpu, int) else 0) + mig_cap
    evidence = {
        "capacity": view["capacity"],
        "allocatable": view["allocatable"],
        "requested": view["requested"],
        "gpu_count_label": expected,
    }
    plugin = view["operands"].get("device-plugin")
    if plugin is not None:
        evidence["device_plugin_pod"] = plugin["name"]
        evidence["device_plugin_ready"] = plugin["ready"]
    if not (is_gpu_node(node) or expected):
        return []
    if advertised == 0:
        if managed and plugin is None:
            reason, msg = "DevicePluginMissing", "no device plugin pod on %s, so no GPU is advertised" % name
            fix = (
                "Check the device plugin DaemonSet (nodeSelector nvidia.com/gpu.deploy.device-plugin=true, "
                "tolerations)."
            )
        elif managed and not plugin["ready"]:
            reason = "DevicePluginNotReady"
            msg = "device plugin pod %s on %s is not Ready (%s), so no GPU is advertised" % (
                plugin["name"],
                name,
                plugin["waiting_reason"] or plugin["phase"],
            )
            fix = "The device plugin waits for the driver and toolkit; fix the lower layers first, then its log."
        else:
            reason = "DevicePluginNotAdvertising"
            msg = "node %s advertises no GPUs: capacity nvidia.com/gpu=%s, allocatable %s%s" % (
                name,
                cap_gpu,
                alloc_gpu,
                " although GFD counts %d GPUs" % expected if expected else "",
            )
            fix = (
                "The device plugin pod runs but does not register GPUs with the kubelet: read its log "
                "(kubectl logs -n %s %s), check the kubelet's device-plugins socket and the plugin config "
                "(MIG strategy, sharing)." % (operator_namespace, plugin["name"] if plugin else "<pod>")
            )
        return [finding("device-plugin", reason, "error", msg, fix, evidence, nodes=[name])]
    if isinstance(cap_gpu, int) and isinstance(alloc_gpu, int) and alloc_gpu < cap_gpu:
        xid = [
            event_evidence(e)
            for e in node_events
            if "Xid" in (e.get("reason") or "") or "Xid" in (e.get("message") or "")
        ]
        evidence["events"] = xid[-3:]
        return [
            finding(
                "device-plugin",
                "UnhealthyGPUs",
                "warning",
                "node %s advertises %d of %d GPUs: %d marked unhealthy"
                % (name, alloc_gpu, cap_gpu, cap_gpu - alloc_gpu),
                "Look for Xid errors (dmesg, DCGM_FI_DEV_XID_ERRORS); Xid 79 (fallen off the bus) needs a reset "
                "or reboot of the node.",
                evidence,
                nodes=[name],
            )
        ]
    return []
