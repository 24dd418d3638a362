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
row). Judged here, lowest layer first: NVML on the host and the operator's ``gpu.present`` label (``driver``); the
node is Ready (``node``); gpu-feature-discovery's labels and, on a node that uses the device plugin, GPUs advertised
at all and as many as NVML counts (``device-plugin``) and GPUs the plugin marks unhealthy (``gpu-health``); the
operand pods (``operand_judgement``: driver, toolkit, validator, the others); on a node that uses DRA, the kubelet
plugin, ResourceSlices and pool generations, DeviceClasses, the published devices against NVML and device taints
(``dra``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import layer_rank
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import is_true
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import (
    dra_only,
    judge_dra,
    uses_dra,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import (
    judge_operands,
    judged,
    node_subject,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    GPU_NODE_LABELS,
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
)

#: Codes a pod's own requests judge for the pod: whether the DeviceClass its claims ask for is the missing one,
#: whether a tainted device is one they need, whether its node selectors need a label gpu-feature-discovery did not
#: write (a node's judgement names them whatever the pod asks for).
POD_JUDGED_CODES = ("DeviceClassMissing", "DeviceTainted", "GPULabelsMissing")
#: Codes of a node that still serves part of its GPUs: an error of the node, a warning for a pod that may fit on
#: the rest.
DEGRADED_CODES = ("UnhealthyGPUs",)


@dataclass(frozen=True)
class Context:
    """What the judgement needs beyond one node: ``classes_missing``, the DeviceClasses of the driver that do not
    exist (cluster-wide); ``namespace``, the operator's namespace (named in fixes); ``pod_details``, a function
    from an operand pod summary to the evidence a workflow shows of it (default: the summary); ``xid_events``, the
    node's events that name an Xid (evidence of unhealthy GPUs); ``sandbox_failures``, operand pod name -> why its
    sandbox cannot be created; ``nri_plugin``, the ClusterPolicy's NRI plugin mode (the toolkit's NRI plugin, no
    runtime handler)."""

    classes_missing: Sequence[str] = ()
    namespace: str = "the operator namespace"
    pod_details: Callable[[dict], dict] = dict
    xid_events: Sequence[dict] = ()
    sandbox_failures: Mapping[str, str] = field(default_factory=dict)
    nri_plugin: bool = False


def mig_enabled(view):
    """True when the node is asked to run a MIG layout (a config other than all-disabled)."""
    mig = (view.get("gpu") or {}).get("mig") or {}
    return bool(mig.get("capable")) and mig.get("config") not in (None, "", "all-disabled")


REQUIRED_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count")
DRA_REQUIRED_LABELS = REQUIRED_LABELS[:1]


def judge_node(view, nvml=None, context=None):
    """The findings of the node's layers judged here, lowest layer first (in judging order within a layer);
    ``nvml``: the host's NVML facts (None: not known, so nothing is compared with them)."""
    context = context or Context()
    out = judge_nvml(nvml) + judge_labels(view) + judge_ready(view)
    if not dra_only(view):
        out.extend(judge_devices(view, nvml, context))
    out.extend(judge_operands(view, context))
    if uses_dra(view):
        out.extend(judge_dra(view, nvml, context))
    return sorted(out, key=lambda f: layer_rank(f["layer"]))


def is_gpu_view(view):
    """True for the view of a GPU node: a GPU label (the operator's, NFD's PCI vendor 10de) or GPUs advertised."""
    labels = view.get("labels") or {}
    capacity = view.get("capacity") or view.get("allocatable") or {}
    return bool(
        any(is_true(labels.get(k)) for k in GPU_NODE_LABELS)
        or labels.get("nvidia.com/gpu.count")
        or any(_int(v) for k, v in capacity.items() if k == GPU_RESOURCE or k.startswith(MIG_RESOURCE_PREFIX))
    )


def judge_nvml(nvml):
    """``driver`` layer, from the host: NVML answers (None: its facts were not gathered, nothing judged)."""
    if nvml is None or nvml.get("available"):
        return []
    return [
        judged(
            "driver",
            "NVMLUnavailable",
            "NVML unavailable on the host: %s" % nvml.get("reason"),
            nvml.get("hint") or "Check that the NVIDIA driver is loaded on the host.",
            {"reason": nvml.get("reason")},
        )
    ]


def judge_labels(view):
    """The operator's and gpu-feature-discovery's labels: ``nvidia.com/gpu.present=false`` is the operator saying
    that the GPUs are gone (``driver``); a label the device plugin's mode needs missing (``device-plugin``)."""
    labels = view.get("labels") or {}
    present = labels.get("nvidia.com/gpu.present")
    if present is not None and not is_true(present):
        return [
            judged(
                "driver",
                "GPUNotPresent",
                "%s has nvidia.com/gpu.present=%s: the operator no longer sees its GPUs"
                % (node_subject(view), present),
                "Check the GPUs on the host (lspci -d 10de:, dmesg for Xid/fallen off the bus) and reboot or service "
                "the node.",
                {"labels": labels},
            )
        ]
    if not is_gpu_view(view):
        return []
    required = DRA_REQUIRED_LABELS if dra_only(view) else REQUIRED_LABELS
    missing = [k for k in required if not labels.get(k)]
    if not missing:
        return []
    return [
        judged(
            "device-plugin",
            "GPULabelsMissing",
            "GPU labels missing on %s: %s" % (node_subject(view), ", ".join(missing)),
            "Check the gpu-feature-discovery pod on this node (it writes the nvidia.com/gpu.* labels).",
            {"labels": labels},
        )
    ]


def judge_ready(view):
    """The ``node`` layer: the node is Ready."""
    if view.get("ready", True):
        return []
    cond = (view.get("conditions") or {}).get("Ready") or {}
    return [
        judged(
            "node",
            "NodeNotReady",
            "%s is NotReady (%s: %s)" % (node_subject(view), cond.get("reason"), cond.get("message")),
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
    if not is_gpu_view(view):
        return []  # not a GPU node: nothing to advertise
    expected_plugin = (view.get("deploy") or {}).get("device-plugin") == "true"
    if advertised == 0 or (plugin is None and expected_plugin and alloc_gpu < cap_gpu):
        # the kubelet keeps a stopped plugin's capacity for a while, its allocatable drops at once
        return [_not_advertising(view, nvml, context, details)]
    # a plugin pod waiting for its sandbox is the toolkit layer's (operand_judgement)
    if plugin is not None and not plugin.get("ready") and plugin.get("waiting_reason") != "ContainerCreating":
        return [
            judged(
                "device-plugin",
                "DevicePluginNotReady",
                "device plugin pod %s on %s is not Ready (%s): the GPUs it advertised before stay, new ones and health "
                "changes are not reported%s"
                % (
                    plugin.get("name"),
                    node_subject(view),
                    plugin.get("waiting_reason") or plugin.get("phase"),
                    _said(plugin),
                ),
                "Read its log (kubectl logs -n %s %s --previous); it waits for the driver and toolkit."
                % (context.namespace, plugin.get("name")),
                details,
            )
        ]
    if mig_enabled(view):
        return []  # the MIG layout decides what is advertised (the mig layer)
    if alloc_gpu < cap_gpu:
        details["events"] = list(context.xid_events)[-3:]
        return [
            judged(
                "gpu-health",
                "UnhealthyGPUs",
                "%s advertises nvidia.com/gpu capacity %d but allocatable %d: the device plugin marks %d GPU(s) "
                "unhealthy" % (node_subject(view), cap_gpu, alloc_gpu, cap_gpu - alloc_gpu),
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
                node_subject(view),
                cap_gpu,
                nvml.get("gpu_count"),
                " (%d replicas each)" % replicas if expected != nvml.get("gpu_count") else "",
            ),
            "Check the device plugin pod on this node (its log names the GPUs it found) and its sharing config.",
            details,
        )
    ]


def _said(pod):
    """``: <its last words>`` of a plugin pod (its last termination message, else why it waits), or nothing."""
    words = pod.get("last_termination_message") or pod.get("waiting_message")
    return ": %s" % words.strip().splitlines()[-1] if words and words.strip() else ""


def _not_advertising(view, nvml, context, details):
    plugin = details.get("device_plugin_pod")
    counted = (nvml or {}).get("gpu_count") if nvml is not None else (view.get("gpu") or {}).get("count")
    counted_by = "NVML" if nvml is not None else "GFD"
    if plugin is None and (view.get("deploy") or {}).get("device-plugin") == "true":
        capacity = _int(details["capacity"].get(GPU_RESOURCE))
        kept = " (the kubelet keeps nvidia.com/gpu capacity %d for a while, allocatable %d)" % (
            capacity,
            _int(details["allocatable"].get(GPU_RESOURCE)),
        )
        code, message = (
            "DevicePluginMissing",
            "no device plugin pod on %s, so no GPU is advertised%s" % (node_subject(view), kept if capacity else ""),
        )
        fix = (
            "Check the device plugin DaemonSet in %s (nodeSelector nvidia.com/gpu.deploy.device-plugin=true, "
            "tolerations for the node's taints)." % context.namespace
        )
    elif plugin is not None and not details.get("device_plugin_ready"):
        pod = (view.get("operands") or {}).get("device-plugin") or {}
        code = "DevicePluginNotReady"
        message = "device plugin pod %s on %s is not Ready (%s), so no GPU is advertised%s" % (
            plugin,
            node_subject(view),
            pod.get("waiting_reason") or pod.get("phase"),
            _said(pod),
        )
        fix = "The device plugin waits for the driver and toolkit: fix the lower layers first, then read its log."
    else:
        code = "DevicePluginNotAdvertising"
        message = "%s advertises nvidia.com/gpu=0%s" % (
            node_subject(view),
            " but %s counts %s GPUs" % (counted_by, counted) if counted else "",
        )
        fix = (
            "The device plugin does not register GPUs with the kubelet: read its log (kubectl logs -n %s %s), check "
            "the kubelet's device-plugins socket and the plugin config (MIG strategy, sharing)."
            % (context.namespace, plugin or "<device plugin pod>")
        )
    return judged("device-plugin", code, message, fix, details)
