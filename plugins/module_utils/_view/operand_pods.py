# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU Operator operand pods from raw pod JSON (pure): which component a pod is, a summary of its state, and
the pods grouped by node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import PLUGIN_COMPONENT

#: Operand DaemonSet / app label -> component name (the suffix of ``nvidia.com/gpu.deploy.<component>``).
COMPONENTS = {
    "nvidia-driver-daemonset": "driver",
    "nvidia-container-toolkit-daemonset": "container-toolkit",
    "nvidia-device-plugin-daemonset": "device-plugin",
    "nvidia-device-plugin-mps-control-daemon": "device-plugin-mps",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia-dcgm": "dcgm",
    "nvidia-dcgm-exporter": "dcgm-exporter",
    "nvidia-operator-validator": "operator-validator",
    "nvidia-mig-manager": "mig-manager",
    "nvidia-node-status-exporter": "node-status-exporter",
    "nvidia-sandbox-device-plugin-daemonset": "sandbox-device-plugin",
    "nvidia-sandbox-validator": "sandbox-validator",
    "nvidia-vfio-manager": "vfio-manager",
    "nvidia-vgpu-manager-daemonset": "vgpu-manager",
    "nvidia-vgpu-device-manager": "vgpu-device-manager",
    "nvidia-kata-manager": "kata-manager",
    "nvidia-cc-manager": "cc-manager",
    "nvidia-cuda-validator": "cuda-validator",
    "nvidia-device-plugin-validator": "device-plugin-validator",
    "nvidia-dra-driver-kubelet-plugin": PLUGIN_COMPONENT,
}


def pod_component(pod):
    """The operand component a pod belongs to, or None for pods that are not operands (e.g. the operator)."""
    labels = labels_of(pod)
    if labels.get("app.kubernetes.io/component") == "nvidia-driver":
        return "driver"  # NVIDIADriver-managed driver DaemonSets have per-pool names
    for key in ("app", "app.kubernetes.io/name"):
        if labels.get(key) in COMPONENTS:
            return COMPONENTS[labels[key]]
    for ref in meta_of(pod).get("ownerReferences") or []:
        if ref.get("kind") == "DaemonSet":
            return COMPONENTS.get(ref.get("name"), ref.get("name"))
    return None


def conditions_by_type(conditions):
    """``{type: {status, reason, message, last_transition_time}}`` of a conditions list."""
    return {
        c.get("type"): {
            "status": c.get("status"),
            "reason": c.get("reason"),
            "message": c.get("message"),
            "last_transition_time": c.get("lastTransitionTime"),
        }
        for c in conditions or []
        if c.get("type")
    }


def pod_summary(pod):
    """Phase, readiness, restarts and the latest termination/waiting reasons of one pod."""
    meta = meta_of(pod)
    status = pod.get("status") or {}
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    restarts = 0
    waiting_reason = waiting_message = None
    last_termination = None  # (finishedAt, reason, container, message)
    for cs in statuses:
        restarts += cs.get("restartCount") or 0
        state = cs.get("state") or {}
        # The most telling reason wins: CrashLoopBackOff/ImagePullBackOff over PodInitializing.
        if state.get("waiting") and waiting_reason in (None, "PodInitializing", "ContainerCreating"):
            waiting_reason = state["waiting"].get("reason") or waiting_reason
            waiting_message = state["waiting"].get("message") or None
        for term in ((cs.get("lastState") or {}).get("terminated"), state.get("terminated")):
            if term and term.get("reason") and term.get("reason") != "Completed":
                key = term.get("finishedAt") or ""
                if last_termination is None or key >= last_termination[0]:
                    last_termination = (key, term.get("reason"), cs.get("name"), term.get("message"))
    ready = conditions_by_type(status.get("conditions")).get("Ready", {}).get("status") == "True"
    return {
        "name": meta.get("name"),
        "phase": status.get("phase"),
        "ready": ready,
        "restarts": restarts,
        "waiting_reason": waiting_reason,
        "waiting_message": (waiting_message or "")[:500] or None,
        "last_termination_reason": last_termination[1] if last_termination else None,
        "last_termination_container": last_termination[2] if last_termination else None,
        # its end: a message the kubelet took from the log (FallbackToLogsOnError) ends with the error
        "last_termination_message": (last_termination[3] or "").strip()[-500:] or None if last_termination else None,
        "terminating": bool(meta.get("deletionTimestamp")),
        "start_time": status.get("startTime"),
    }


#: Waiting reasons that no amount of waiting fixes: the image cannot be pulled or the container cannot be created
#: from its spec (a CrashLoopBackOff is stuck after :data:`STUCK_RESTARTS`; a sandbox after a FailedCreatePodSandBox).
STUCK_WAITING = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"}
)
#: Restarts after which a crash-looping operand counts as stuck (kubelet's back-off is past a minute by then).
STUCK_RESTARTS = 3


def sandbox_events_by_pod(events):
    """``{pod name: message}`` of the newest FailedCreatePodSandBox event per pod."""
    out = {}
    for ev in sorted(events or [], key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or ""):
        obj = ev.get("involvedObject") or ev.get("involved_object") or {}
        if obj.get("kind") == "Pod" and obj.get("name"):
            out[obj["name"]] = ev.get("message")
    return out


def creating_pods(pods):
    """Whether some operand pod waits in ContainerCreating (its sandbox may be failing: the events say)."""
    return any(pod_component(p) and pod_summary(p)["waiting_reason"] == "ContainerCreating" for p in pods or [])


def operand_stuck(summary):
    """A pod summary that waiting will not make ready: its sandbox cannot be created, its image cannot be pulled,
    or it has crash-looped :data:`STUCK_RESTARTS` times."""
    if operand_ok(summary) or summary["terminating"]:
        return False
    if summary.get("sandbox_error") and summary["waiting_reason"] == "ContainerCreating":
        return True
    if summary["waiting_reason"] == "CrashLoopBackOff":
        return summary["restarts"] >= STUCK_RESTARTS
    return summary["waiting_reason"] in STUCK_WAITING


def _better(candidate, current):
    """Pick the pod that describes a component on a node: not terminating first, then the newest."""
    return (not candidate["terminating"], candidate["start_time"] or "") > (
        not current["terminating"],
        current["start_time"] or "",
    )


def operands_by_node(pods, sandbox_events=None):
    """``{node_name: {component: summary}}`` for operand pods bound to a node; plus unbound operand pods.

    When a component has several pods on a node (a rollout in progress), the chosen one is the
    non-terminating newest and the others are named in its ``other_pods``. ``sandbox_events``: the raw
    FailedCreatePodSandBox events (None: not read); each summary's ``sandbox_error`` is its pod's newest message.
    """
    by_node = {}
    unscheduled = []
    sandbox = sandbox_events_by_pod(sandbox_events)
    for pod in pods:
        component = pod_component(pod)
        if component is None:
            continue
        summary = pod_summary(pod)
        summary["component"] = component
        summary["sandbox_error"] = sandbox.get(summary["name"])
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            unscheduled.append(summary)
            continue
        components = by_node.setdefault(node_name, {})
        current = components.get(component)
        summary["other_pods"] = []
        if current is None:
            components[component] = summary
        elif _better(summary, current):
            summary["other_pods"] = current["other_pods"] + [current["name"]]
            current["other_pods"] = []
            components[component] = summary
        else:
            current["other_pods"].append(summary["name"])
    return by_node, unscheduled


def operand_ok(summary):
    """An operand pod summary that is healthy: ready, or Succeeded (validation workload pods run to completion)."""
    return summary["ready"] or summary["phase"] == "Succeeded"
