# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``preemption`` layer: whether a Pending GPU pod's priority can free the GPUs it waits for (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import key_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    about_nodes,
    finding,
    named,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    is_terminal,
    pod_requests,
)


def preemption_findings(snap, pod, short_nodes, scheduler_preemption):
    """Findings for a Pending ``pod``: a preemption in progress, or whether the lower-priority GPU pods bound to
    ``short_nodes`` (its candidates short of GPUs) could be preempted for it.

    ``scheduler_preemption`` is the preemption part of the pod's ``FailedScheduling`` message (parsed).
    """
    spec, status, key = pod.get("spec") or {}, pod.get("status") or {}, key_of(pod)
    name = spec.get("priorityClassName")
    priority = spec.get("priority") or 0
    policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
    ev = {
        "priority_class": name,
        "priority": priority,
        "preemption_policy": policy,
        "priority_class_exists": named(snap.priority_classes, name) is not None if name else None,
        "scheduler_preemption": scheduler_preemption,
        "nominated_node": status.get("nominatedNodeName"),
    }
    if status.get("nominatedNodeName"):
        return [
            about_nodes(
                [status["nominatedNodeName"]],
                finding(
                    "preemption",
                    "PreemptionInProgress",
                    "info",
                    "the scheduler nominated %s for pod %s and is preempting lower-priority pods there"
                    % (status["nominatedNodeName"], key),
                    "Wait for the victims to terminate.",
                    ev,
                ),
            )
        ]
    if not short_nodes:
        return []
    victims, blockers = [], []
    for other in snap.bound_pods:
        node = (other.get("spec") or {}).get("nodeName")
        if node not in short_nodes or is_terminal(other) or not pod_requests(other):
            continue
        entry = {
            "pod": key_of(other),
            "node": node,
            "priority": (other.get("spec") or {}).get("priority") or 0,
            "gpus": pod_requests(other),
        }
        (victims if entry["priority"] < priority else blockers).append(entry)
    ev.update(lower_priority_gpu_pods=victims, blocking_gpu_pods=blockers[:20])
    victim_nodes = sorted({v["node"] for v in victims})
    if victims and policy == "Never":
        return [
            about_nodes(
                victim_nodes,
                finding(
                    "preemption",
                    "PreemptionDisabled",
                    "error",
                    "pod %s has preemptionPolicy Never: it will not preempt the %d lower-priority GPU pod(s) on %s"
                    % (key, len(victims), ", ".join(victim_nodes)),
                    "Use a PriorityClass with preemptionPolicy PreemptLowerPriority, or wait for GPUs to free up.",
                    ev,
                ),
            )
        ]
    if not victims:
        return [
            about_nodes(
                short_nodes,
                finding(
                    "preemption",
                    "PreemptionNotPossible",
                    "warning",
                    "preemption cannot help pod %s (priority %d%s): no GPU pod with a lower priority runs on %s"
                    % (key, priority, ", class %s" % name if name else "", ", ".join(short_nodes)),
                    "Give the pod a higher PriorityClass (one with preemptionPolicy PreemptLowerPriority), or wait for "
                    "the GPU pods to finish.",
                    ev,
                ),
            )
        ]
    return [
        about_nodes(
            victim_nodes,
            finding(
                "preemption",
                "PreemptionPossible",
                "info",
                "%d lower-priority GPU pod(s) could be preempted for pod %s" % (len(victims), key),
                "The scheduler preempts on its next attempt unless PodDisruptionBudgets or other filters prevent it.",
                ev,
            ),
        )
    ]
