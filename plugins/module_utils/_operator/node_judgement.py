# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One judgement of a GPU node, shared by gpu_validate_report, gpu_triage_info and gpu_audit_report (pure).

The input is the cluster's view of the node (``cluster_view.node_view``) and, where they are known, the NVML facts
of its host (``nvidia_gpu_facts``: ``available``, ``gpu_count``, ``gpus[].uuid``). The output is the node's
findings of the layers judged here, lowest layer first, each ``{layer, code, severity, message, fix, details}``:
the workflows add only what is theirs (validate its check name, triage the node and pods it is about, audit the
row). Judged here: the ``node`` layer (Ready); on a node that uses the device plugin, the ``device-plugin`` layer
(GPUs advertised at all, and as many as NVML counts) and ``gpu-health`` (GPUs the plugin marks unhealthy); on a node
that uses DRA, the ``dra`` layer (kubelet plugin, ResourceSlices and pool generations, DeviceClasses, the published
devices against NVML, device taints).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    GPU_NODE_LABELS,
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_view import PLUGIN_COMPONENT, blocking
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import is_true, taint_text

#: Codes a pod's own claims judge for the pod: whether the DeviceClass it asks for is the missing one, whether a
#: tainted device is one it needs (a node's judgement names them whatever the pod asks for).
CLAIM_JUDGED_CODES = ("DeviceClassMissing", "DeviceTainted")
#: Codes of a node that still serves part of its GPUs: an error of the node, a warning for a pod that may fit on
#: the rest.
DEGRADED_CODES = ("UnhealthyGPUs",)


def judged(layer, code, message, fix, details=None, severity="error"):
    """One finding of the node's judgement: its ``layer``, a stable ``code``, the text and the fix."""
    return {
        "layer": layer,
        "code": code,
        "severity": severity,
        "message": message,
        "fix": fix,
        "details": details or {},
    }


class Context:
    """What the judgement needs beyond one node: ``classes_missing``, the DeviceClasses of the driver that do not
    exist (cluster-wide); ``namespace``, the operator's namespace (named in fixes); ``pod_details``, a function
    from an operand pod summary to the evidence a workflow shows of it (default: the summary); ``xid_events``, the
    node's events that name an Xid (evidence of unhealthy GPUs)."""

    def __init__(self, classes_missing=(), namespace=None, pod_details=None, xid_events=()):
        self.classes_missing = tuple(classes_missing or ())
        self.namespace = namespace or "the operator namespace"
        self.pod_details = pod_details or dict
        self.xid_events = list(xid_events)


def dra_only(view):
    """True when the node's GPUs reach pods through DRA only: it publishes DRA devices and advertises no extended
    resource, or it runs (or is labelled to run) the DRA kubelet plugin and advertises none."""
    mode = view.get("mode")
    return mode == "dra" or (mode == "none" and bool((view.get("dra") or {}).get("expected")))


def mig_enabled(view):
    """True when the node is asked to run a MIG layout (a config other than all-disabled)."""
    mig = (view.get("gpu") or {}).get("mig") or {}
    return bool(mig.get("capable")) and mig.get("config") not in (None, "", "all-disabled")


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


def _subject(view):
    """``node NAME`` (``the node`` for a view without a name)."""
    return "node %s" % view["name"] if view.get("name") else "the node"


def judge_node(view, nvml=None, context=None):
    """The findings of the node layers judged here, lowest layer first; ``nvml``: the host's NVML facts (None: not
    known, so nothing is compared with them)."""
    context = context or Context()
    out = judge_ready(view)
    if not dra_only(view):
        out.extend(judge_devices(view, nvml, context))
    if uses_dra(view):
        out.extend(judge_dra(view, nvml, context))
    return out


def judge_ready(view):
    """The ``node`` layer: the node is Ready."""
    if view.get("ready", True):
        return []
    cond = (view.get("conditions") or {}).get("Ready") or {}
    return [
        judged(
            "node",
            "NodeNotReady",
            "%s is NotReady (%s: %s)" % (_subject(view), cond.get("reason"), cond.get("message")),
            "Bring the kubelet back (journalctl -u kubelet on the node; its container runtime and its network to the "
            "API server): nothing schedules on a NotReady node.",
            {"condition": cond},
        )
    ]


def _int(value):
    return value if isinstance(value, int) else 0


def judge_devices(view, nvml=None, context=None):
    """The ``device-plugin`` and ``gpu-health`` layers of a node whose GPUs reach pods as extended resources: GPUs
    advertised at all (else why not: no plugin pod, a plugin pod not ready, a plugin that registers nothing); with MIG
    off (the mig layer judges a MIG layout's resources), GPUs the plugin marks unhealthy (allocatable below capacity)
    and - with NVML's count - as many advertised as NVML counts (times the sharing replicas). NVML facts that did
    not answer judge nothing: the ``driver`` layer is the finding."""
    context = context or Context()
    if nvml is not None and not nvml.get("available"):
        return []
    allocatable = view.get("allocatable") or {}
    capacity = view.get("capacity") or allocatable
    cap_gpu, alloc_gpu = _int(capacity.get(GPU_RESOURCE)), _int(allocatable.get(GPU_RESOURCE))
    advertised = cap_gpu + sum(_int(v) for k, v in capacity.items() if k.startswith(MIG_RESOURCE_PREFIX))
    details = {
        "capacity": capacity,
        "allocatable": allocatable,
        "gpu_count_label": (view.get("gpu") or {}).get("count"),
    }
    if nvml is not None:
        details["nvml_gpu_count"] = nvml.get("gpu_count")
    plugin = (view.get("operands") or {}).get("device-plugin")
    if plugin is not None:
        details.update(device_plugin_pod=plugin.get("name"), device_plugin_ready=plugin.get("ready"))
    labels = view.get("labels") or {}
    if not (advertised or details["gpu_count_label"] or any(is_true(labels.get(k)) for k in GPU_NODE_LABELS)):
        return []  # not a GPU node: nothing to advertise
    if advertised == 0:
        return [_not_advertising(view, nvml, context, details)]
    if mig_enabled(view):
        return []  # the MIG layout decides what is advertised (the mig layer)
    if alloc_gpu < cap_gpu:
        details["events"] = context.xid_events[-3:]
        return [
            judged(
                "gpu-health",
                "UnhealthyGPUs",
                "%s advertises nvidia.com/gpu capacity %d but allocatable %d: the device plugin marks %d GPU(s) "
                "unhealthy" % (_subject(view), cap_gpu, alloc_gpu, cap_gpu - alloc_gpu),
                "Look for Xid errors (node events, dmesg, DCGM_FI_DEV_XID_ERRORS); Xid 79 (fallen off the bus) needs "
                "a reset or reboot: drain the node and reset or replace the GPU.",
                details,
            )
        ]
    if nvml is None:
        return []  # nothing to compare with
    replicas = (view.get("gpu") or {}).get("replicas")
    expected = _int(nvml.get("gpu_count")) * (replicas if isinstance(replicas, int) and replicas > 1 else 1)
    if cap_gpu == expected:
        return []
    return [
        judged(
            "device-plugin",
            "AdvertisedNotAsNVML",
            "%s advertises nvidia.com/gpu=%d but NVML counts %s GPUs%s"
            % (
                _subject(view),
                cap_gpu,
                nvml.get("gpu_count"),
                " (%d replicas each)" % replicas if expected != nvml.get("gpu_count") else "",
            ),
            "Check the device plugin pod on this node (its log names the GPUs it found) and its sharing config.",
            details,
        )
    ]


def _not_advertising(view, nvml, context, details):
    plugin = details.get("device_plugin_pod")
    counted = (nvml or {}).get("gpu_count") if nvml is not None else (view.get("gpu") or {}).get("count")
    counted_by = "NVML" if nvml is not None else "GFD"
    if plugin is None and (view.get("deploy") or {}).get("device-plugin") == "true":
        code, message = "DevicePluginMissing", "no device plugin pod on %s, so no GPU is advertised" % _subject(view)
        fix = (
            "Check the device plugin DaemonSet in %s (nodeSelector nvidia.com/gpu.deploy.device-plugin=true, "
            "tolerations for the node's taints)." % context.namespace
        )
    elif plugin is not None and not details.get("device_plugin_ready"):
        pod = (view.get("operands") or {}).get("device-plugin") or {}
        code = "DevicePluginNotReady"
        message = "device plugin pod %s on %s is not Ready (%s), so no GPU is advertised" % (
            plugin,
            _subject(view),
            pod.get("waiting_reason") or pod.get("phase"),
        )
        fix = "The device plugin waits for the driver and toolkit: fix the lower layers first, then read its log."
    else:
        code = "DevicePluginNotAdvertising"
        message = "%s advertises nvidia.com/gpu=0%s" % (
            _subject(view),
            " but %s counts %s GPUs" % (counted_by, counted) if counted else "",
        )
        fix = (
            "The device plugin does not register GPUs with the kubelet: read its log (kubectl logs -n %s %s), check "
            "the kubelet's device-plugins socket and the plugin config (MIG strategy, sharing)."
            % (context.namespace, plugin or "<device plugin pod>")
        )
    return judged("device-plugin", code, message, fix, details)


def judge_dra(view, nvml=None, context=None):
    """The ``dra`` layer of a node that uses DRA (:func:`uses_dra`), in the order a claim needs it: the kubelet
    plugin, the ResourceSlices and DeviceClasses, the published devices against NVML, device taints."""
    context = context or Context()
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
                % (PLUGIN_COMPONENT, _subject(view)),
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
        _subject(view)
    )
    if not pools:
        return [
            judged(
                "dra",
                "NoResourceSlice",
                "no ResourceSlice of driver %s for %s: it offers no device to claims"
                % (dra.get("driver"), _subject(view)),
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
            % (len(tainted), _subject(view), ", ".join("%s %s" % (d, taint_text(t)) for d, t in tainted)),
            device_taint_fix(texts),
            {"tainted": [{"device": d, "taint": t} for d, t in tainted]},
        )
    ]
