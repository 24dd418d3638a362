# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The checks of a node whose GPUs reach pods through DRA (the GPU Operator's GPUCluster mode), in the order the
scheduler depends on them: the DRA kubelet plugin pod, the node's ResourceSlices (published, complete, current),
its devices against NVML (count and UUIDs), and device taints. Every finding names the ``dra`` layer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_view import PLUGIN_COMPONENT, blocking
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import finding

LAYER = "dra"


def dra_only(node):
    """True when the node's GPUs reach pods through DRA only: it publishes DRA devices and advertises no extended
    resource, or it runs (or is labelled to run) the DRA kubelet plugin and advertises none."""
    mode = node.get("mode")
    return mode == "dra" or (mode == "none" and bool((node.get("dra") or {}).get("expected")))


def uses_dra(node):
    """True when the DRA checks apply: DRA only, or both DRA devices and extended resources."""
    return node.get("mode") == "both" or dra_only(node)


def check_plugin(node):
    """The DRA kubelet plugin pod runs on the node and is ready."""
    dra = node.get("dra") or {}
    if dra.get("plugin_ready"):
        return []
    pod = (node.get("operands") or {}).get(PLUGIN_COMPONENT)
    if pod is None:
        evidence = "no DRA kubelet plugin pod (%s) runs on the node" % PLUGIN_COMPONENT
    else:
        why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
        evidence = "DRA kubelet plugin pod %s is not ready (%s, %s restarts)" % (
            pod.get("name"),
            why,
            pod.get("restarts"),
        )
        if pod.get("last_termination_message"):
            evidence += "; last termination: %s" % pod["last_termination_message"]
    return [
        finding(
            "dra-plugin",
            LAYER,
            evidence + ": claims allocated on this node cannot be prepared",
            "Read the plugin pod's log (kubectl logs --previous) in the operator namespace; check the GPUCluster's "
            "draDriver and the nvidia.com/gpu.deploy.dra-driver label.",
        )
    ]


def check_slices(node):
    """The driver published the node's ResourceSlices, every pool complete and of one generation."""
    dra = node.get("dra") or {}
    pools = dra.get("pools") or []
    fix = "Read the DRA kubelet plugin's log on this node: it publishes the node's ResourceSlices."
    if not pools:
        return [
            finding(
                "dra-slices",
                LAYER,
                "no ResourceSlice of driver %s for this node: it offers no device to claims" % dra.get("driver"),
                fix,
            )
        ]
    out = []
    for pool in pools:
        if not pool.get("complete"):
            out.append(
                finding(
                    "dra-slices",
                    LAYER,
                    "pool %s is incomplete: generation %s announces %s slice(s), %d exist (%s); the scheduler "
                    "allocates nothing from it"
                    % (
                        pool.get("name"),
                        pool.get("generation"),
                        pool.get("resource_slice_count"),
                        len(pool.get("slices") or []),
                        ", ".join(pool.get("slices") or []),
                    ),
                    fix,
                )
            )
        if pool.get("stale_slices"):
            out.append(
                finding(
                    "dra-slices",
                    LAYER,
                    "pool %s has slice(s) older than generation %s: %s"
                    % (pool.get("name"), pool.get("generation"), ", ".join(pool["stale_slices"])),
                    fix + " Slices of an older generation are left over by a plugin that restarted mid-update.",
                )
            )
    return out


def published_gpus(devices):
    """``{uuid: [device name, ...]}`` of the physical GPUs the devices stand for (a MIG device for its parent)."""
    out = {}
    for d in devices:
        uuid = d.get("parent_uuid") if d.get("type") == "mig" else d.get("uuid")
        if uuid:
            out.setdefault(uuid, []).append(d.get("name"))
    return out


def check_devices(nvml, node):
    """The published devices stand for exactly the GPUs NVML counts on the host, by UUID."""
    dra = node.get("dra") or {}
    if not nvml.get("available") or not any(p.get("complete") for p in dra.get("pools") or []):
        return []  # no count to compare with (driver finding), or no usable slice (the slices check)
    published = published_gpus(dra.get("devices") or [])
    host = [g.get("uuid") for g in nvml.get("gpus") or [] if g.get("uuid")]
    missing = sorted(u for u in host if u not in published)
    unknown = sorted(u for u in published if u not in host)
    count = nvml.get("gpu_count") or 0
    if len(published) == count and not missing and not unknown:
        return []
    evidence = "the node's ResourceSlices publish %d GPU(s), NVML counts %d" % (len(published), count)
    if missing:
        evidence += "; not published: %s" % ", ".join(missing)
    if unknown:
        evidence += "; published but not on the host: %s" % ", ".join(unknown)
    return [
        finding(
            "dra-devices",
            LAYER,
            evidence,
            "Check the GPUs the DRA kubelet plugin found (its log) against nvidia-smi -L on the host; a lost GPU "
            "(Xid 79) is not published.",
        )
    ]


def check_taints(node):
    """No device carries a taint that keeps claims from it."""
    devices = (node.get("dra") or {}).get("devices") or []
    tainted = [(d.get("name"), t) for d in devices for t in blocking(d.get("taints") or [])]
    if not tainted:
        return []
    return [
        finding(
            "dra-taints",
            LAYER,
            "device %s is tainted %s=%s:%s: only claims that tolerate it get it"
            % (name, t.get("key"), t.get("value") or "", t.get("effect")),
            "The DRA driver taints a device it finds unhealthy: look the taint up (an Xid names the GPU error), "
            "drain the node and reset or replace the GPU.",
        )
        for name, t in tainted
    ]


def check_classes(dra_summary):
    """The DeviceClasses the published devices need exist (cluster-wide; ``dra_summary``: gpu_cluster_info's dra)."""
    return [
        finding(
            "dra-slices",
            LAYER,
            "DeviceClass %s does not exist: claims for it stay Pending" % name,
            "Check the GPUCluster's status: the operator creates the driver's DeviceClasses.",
        )
        for name in (dra_summary or {}).get("device_classes_missing") or []
    ]
