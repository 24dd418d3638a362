# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The ``dra`` layer of a node's judgement (``node_judgement``) (pure): on a node whose GPUs reach pods through DRA,
the kubelet plugin, the ResourceSlices and pool generations, the DeviceClasses, the published devices against NVML
and device taints."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import taint_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import (
    judged,
    node_subject,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import PLUGIN_COMPONENT, blocking


def dra_only(view):
    """True when the node's GPUs reach pods through DRA only: it publishes DRA devices and advertises no extended
    resource, or it runs (or is labelled to run) the DRA kubelet plugin and advertises none."""
    mode = view.get("mode")
    return mode == "dra" or (mode == "none" and bool((view.get("dra") or {}).get("expected")))


def uses_dra(view):
    """True when the node's ``dra`` layer is judged: DRA only, or both DRA devices and extended resources."""
    return view.get("mode") == "both" or dra_only(view)


def published_gpus(devices):
    """``{uuid: [device name, ...]}`` of the physical GPUs the devices stand for (a MIG device for its parent)."""
    out = {}
    for d in devices:
        uuid = d.get("parent_uuid") if d.get("type") == "mig" else d.get("uuid")
        if uuid:
            out.setdefault(uuid, []).append(d.get("name"))
    return out


def published_against_nvml(devices, uuids):
    """``(published, not_published, unknown)``: the GPUs the devices stand for (:func:`published_gpus`), the NVML
    GPU ``uuids`` no device stands for, and the published UUIDs NVML does not know (both sorted)."""
    published = published_gpus(devices)
    return published, sorted(u for u in uuids if u not in published), sorted(u for u in published if u not in uuids)


def device_taint_fix(taints):
    """The fix for DRA device taints ``taints`` (``key[=value]:effect`` texts, see :func:`taint_text`), built from the
    taints themselves: service the GPU so that whoever set them removes them, or tolerate each in the request."""
    tolerations = []
    for text in sorted(set(taints)):
        rest, _sep, effect = text.rpartition(":")
        key, has_value, value = rest.partition("=")
        tolerations.append(
            "{key: %s, operator: %s%s, effect: %s}"
            % (key, "Equal" if has_value else "Exists", ", value: %s" % json.dumps(value) if has_value else "", effect)
        )
    many = len(tolerations) > 1
    return (
        "The device taint%s %s take%s the device out of use for claims that do not tolerate %s (the DRA driver or "
        "an admin set %s - its timeAdded is in the ResourceSlice): service the GPU so that the taint is removed, or, "
        "to use it anyway, add to the request spec.devices.requests[].exactly.tolerations: [%s]."
        % (
            "s" if many else "",
            ", ".join(sorted(set(taints))),
            "" if many else "s",
            "them" if many else "it",
            "them" if many else "it",
            ", ".join(tolerations),
        )
    )


#: The labels gpu-feature-discovery writes that the device plugin's mode needs (DRA mode: gpu.present only - its
#: devices' attributes carry the product and count).
def judge_dra(view, nvml, context):
    """The ``dra`` layer of a node that uses DRA (:func:`uses_dra`), in the order a claim needs it: the kubelet
    plugin, the ResourceSlices and DeviceClasses, the published devices against NVML, device taints."""
    return (
        _plugin(view, context)
        + _slices(view)
        + _classes(context)
        + (_devices(view, nvml) if nvml is not None else [])
        + _taints(view)
    )


def _plugin(view, context):
    dra = view.get("dra") or {}
    if dra.get("plugin_ready"):
        return []
    pod = (view.get("operands") or {}).get(PLUGIN_COMPONENT)
    if pod is None:
        return [
            judged(
                "dra",
                "DraPluginMissing",
                "no DRA kubelet plugin pod (%s) runs on %s: claims allocated there cannot be prepared"
                % (PLUGIN_COMPONENT, node_subject(view)),
                "Check the nvidia-dra-driver-kubelet-plugin DaemonSet in %s (its nodeSelector "
                "nvidia.com/gpu.deploy.dra-driver=true, tolerations for the node's taints) and the GPUCluster's "
                "draDriver." % context.namespace,
                {"deploy_labels": view.get("deploy") or {}, "taints": view.get("taints") or []},
            )
        ]
    why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
    message = "DRA kubelet plugin pod %s is not ready (%s, %s restarts)" % (pod.get("name"), why, pod.get("restarts"))
    if pod.get("last_termination_message"):
        message += "; last termination: %s" % pod["last_termination_message"]
    return [
        judged(
            "dra",
            "DraPluginNotReady",
            message + ": claims allocated on this node cannot be prepared, their pods stay ContainerCreating "
            "(FailedPrepareDynamicResources)",
            "Read its log (kubectl logs -n %s %s --previous): the plugin needs the NVIDIA driver loaded (NVML) and "
            "CDI; fix the driver layer first, then delete the pod so that its DaemonSet restarts it."
            % (context.namespace, pod.get("name")),
            context.pod_details(pod),
        )
    ]


def _pool_details(dra):
    return {
        "pools": dra.get("pools") or [],
        "devices_total": dra.get("devices_total"),
        "plugin_pod": dra.get("plugin_pod"),
        "plugin_ready": dra.get("plugin_ready"),
    }


def _slices(view):
    dra = view.get("dra") or {}
    pools = dra.get("pools") or []
    restart = "restart its kubelet plugin on %s (delete the pod) so that it publishes a complete new generation" % (
        node_subject(view)
    )
    if not pools:
        return [
            judged(
                "dra",
                "NoResourceSlice",
                "no ResourceSlice of driver %s for %s: it offers no device to claims"
                % (dra.get("driver"), node_subject(view)),
                "The kubelet plugin publishes the node's devices once it has registered: read its log; deleting the "
                "plugin pod makes it start over and publish again.",
                _pool_details(dra),
            )
        ]
    out = []
    for pool in pools:
        slices = pool.get("slices") or []
        if not pool.get("complete"):
            out.append(
                judged(
                    "dra",
                    "PoolIncomplete",
                    "pool %s is incomplete: generation %s announces %s slice(s), %d exist (%s); the scheduler "
                    "allocates nothing from it"
                    % (
                        pool.get("name"),
                        pool.get("generation"),
                        pool.get("resource_slice_count"),
                        len(slices),
                        ", ".join(slices),
                    ),
                    "The driver stopped half-way through publishing: %s." % restart,
                    _pool_details(dra),
                )
            )
        if pool.get("stale_slices"):
            out.append(
                judged(
                    "dra",
                    "StaleSlices",
                    "pool %s has slice(s) older than generation %s: %s"
                    % (pool.get("name"), pool.get("generation"), ", ".join(pool["stale_slices"])),
                    "Slices of an older generation are left over by a plugin that restarted mid-update: %s." % restart,
                    _pool_details(dra),
                )
            )
    return out


def _classes(context):
    return [
        judged(
            "dra",
            "DeviceClassMissing",
            "DeviceClass %s does not exist: claims for it stay Pending" % name,
            "Check the GPUCluster's status: the operator creates the driver's DeviceClasses.",
            {"device_class": name},
        )
        for name in context.classes_missing
    ]


def _devices(view, nvml):
    """The published devices stand for exactly the GPUs NVML counts on the host, by UUID (when NVML answered and a
    complete pool exists: otherwise the driver or the slices are the finding)."""
    dra = view.get("dra") or {}
    if not nvml.get("available") or not any(p.get("complete") for p in dra.get("pools") or []):
        return []
    uuids = [g.get("uuid") for g in nvml.get("gpus") or [] if g.get("uuid")]
    published, missing, unknown = published_against_nvml(dra.get("devices") or [], uuids)
    count = nvml.get("gpu_count") or 0
    if len(published) == count and not missing and not unknown:
        return []
    message = "the node's ResourceSlices publish %d GPU(s), NVML counts %d" % (len(published), count)
    if missing:
        message += "; not published: %s" % ", ".join(missing)
    if unknown:
        message += "; published but not on the host: %s" % ", ".join(unknown)
    return [
        judged(
            "dra",
            "DevicesNotAsNVML",
            message,
            "Check the GPUs the DRA kubelet plugin found (its log) against nvidia-smi -L on the host; a lost GPU "
            "(Xid 79) is not published.",
            {"published": len(published), "nvml_gpu_count": count, "not_published": missing, "unknown": unknown},
        )
    ]


def _taints(view):
    devices = (view.get("dra") or {}).get("devices") or []
    tainted = [(d.get("name"), t) for d in devices for t in blocking(d.get("taints") or [])]
    if not tainted:
        return []
    texts = [taint_text(t) for _name, t in tainted]
    return [
        judged(
            "dra",
            "DeviceTainted",
            "%d device(s) on %s are tainted, and only claims that tolerate the taint get them: %s"
            % (len(tainted), node_subject(view), ", ".join("%s %s" % (d, taint_text(t)) for d, t in tainted)),
            device_taint_fix(texts),
            {"tainted": [{"device": d, "taint": t} for d, t in tainted]},
        )
    ]
