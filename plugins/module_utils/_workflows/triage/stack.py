# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.


"""GPU triage of the node layers on one node: ``driver`` and ``toolkit`` (and the validator) from the operand pods
and their events, then the node's shared judgement (``_operator.node_judgement``: ``node``, ``device-plugin``,
``gpu-health``, ``dra``) (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of, taint_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import Context, judge_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import (
    CRASH_REASONS,
    IMAGE_REASONS,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    cluster_policy_view,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import DraIndex, missing_classes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    about_nodes,
    event_evidence,
    finding,
    from_judged,
    last_seen,
    tail_lines,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    node_requested,
)


def node_scheduling(view):
    """The ``scheduling`` findings of a node by itself: cordoned, and the taints a pod must tolerate."""
    name, out = view["name"], []
    if view["unschedulable"]:
        out.append(
            finding(
                "scheduling",
                "NodeCordoned",
                "warning",
                "node %s is cordoned: no new pod is placed on it" % name,
                "kubectl uncordon %s when maintenance is over." % name,
            )
        )
    taints = [t for t in view["taints"] if t["effect"] in ("NoSchedule", "NoExecute")]
    if taints:
        out.append(
            finding(
                "scheduling",
                "NodeTaints",
                "info",
                "node %s has taints %s: pods must tolerate them" % (name, ", ".join(taint_text(t) for t in taints)),
                None,
                {"taints": taints},
            )
        )
    return [about_nodes([name], f) for f in out]


def container_failure(pod):
    """``{container, waiting_reason, waiting_message, last_termination}`` of the pod's most telling container."""
    status = pod.get("status") or {}
    best = None
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        term = (cs.get("lastState") or {}).get("terminated") or (cs.get("state") or {}).get("terminated") or {}
        if not waiting and not term:
            continue
        if cs.get("ready"):
            continue
        entry = {
            "container": cs.get("name"),
            "restarts": cs.get("restartCount") or 0,
            "waiting_reason": waiting.get("reason"),
            "waiting_message": waiting.get("message"),
            "last_termination": {
                "reason": term.get("reason"),
                "exit_code": term.get("exitCode"),
                "message": term.get("message"),
                "finished_at": term.get("finishedAt"),
            }
            if term
            else None,
        }
        score = (waiting.get("reason") in CRASH_REASONS + IMAGE_REASONS, bool(term))
        if best is None or score > best[0]:
            best = (score, entry)
    return best[1] if best else None


def xid_events(events):
    """The evidence of a node's events that name an Xid (a GPU error), oldest first."""
    return [event_evidence(e) for e in events if "Xid" in (e.get("reason") or "") or "Xid" in (e.get("message") or "")]


def _events_by_name(events, kind):
    """``{name: [event, ...]}`` of the events about objects of ``kind``."""
    out = {}
    for event in events:
        obj = event.get("involvedObject") or {}
        if obj.get("kind") == kind:
            out.setdefault(obj.get("name"), []).append(event)
    return out


class NodeStack:
    """The node layers for every node, from the operand pods and their events and the DRA objects (computed once
    per node). ``dra`` indexes the devices of every DRA driver (for claims), ``gpu_dra`` those of NVIDIA's."""

    def __init__(self, snap):
        self.snap = snap
        self.policy = cluster_policy_view(snap.cluster_policies)
        self.by_node, _unused = operands_by_node(snap.operator_pods)
        self.raw_pods = {name_of(p): p for p in snap.operator_pods}
        self.pod_events = _events_by_name(snap.operator_events, "Pod")
        self.node_events = _events_by_name(snap.node_events, "Node")
        self.requested = node_requested(snap.bound_pods)
        self.nodes = {name_of(n): n for n in snap.nodes}
        self.dra = DraIndex(snap.slices, snap.claims, snap.device_classes, driver=None)
        self.gpu_dra = DraIndex(snap.slices, snap.claims, snap.device_classes)
        self._cache = {}

    def view(self, name):
        """The node's ``cluster_view`` view, with the GPUs ``requested`` by the pods bound to it."""
        view = node_view(self.nodes[name], self.by_node.get(name), dra=self.gpu_dra)
        view["requested"] = dict(self.requested.get(name, {}))
        return view

    def findings(self, name):
        """The node's findings of the node layers."""
        if name not in self._cache:
            self._cache[name] = self._walk(name)
        return self._cache[name]

    # -- helpers ---------------------------------------------------------------------------------

    def _pod_evidence(self, summary):
        """State, telling container, last Warning events and log tail of an operand pod."""
        pod = self.raw_pods.get(summary["name"]) or {}
        out = {
            "pod": "%s/%s" % (self.snap.operator_namespace, summary["name"]),
            "phase": summary["phase"],
            "ready": summary["ready"],
            "restarts": summary["restarts"],
            "waiting_reason": summary["waiting_reason"],
        }
        failure = container_failure(pod)
        if failure:
            out["container"] = failure["container"]
            out["waiting_message"] = failure["waiting_message"]
            out["last_termination"] = failure["last_termination"]
        events = sorted(self.pod_events.get(summary["name"], []), key=lambda e: last_seen(e) or "")
        out["events"] = [event_evidence(e) for e in events if e.get("type") == "Warning"][-3:]
        log = self.snap.logs.get(summary["name"])
        if log is not None:
            if log.get("error"):
                out["log_error"] = log["error"]
            else:
                out["log_tail"] = tail_lines(log.get("text"), self.snap.log_lines)
        return out

    def _walk(self, name):
        view = self.view(name)
        context = Context(
            classes_missing=missing_classes(self.gpu_dra, [view]),
            namespace=self.snap.operator_namespace,
            pod_details=self._pod_evidence,
            xid_events=xid_events(self.node_events.get(name, [])),
            sandbox_failures=self._sandbox_failures(view["operands"]),
            nri_plugin=bool(((self.policy or {}).get("cdi") or {}).get("nri_plugin")),
        )
        out = [from_judged(j, name) for j in judge_node(view, self.snap.nvml.get(name), context)]
        if self.policy is None and self.snap.gpu_cluster is None:
            out.append(
                about_nodes(
                    [name],
                    finding(
                        "driver",
                        "NoClusterPolicy",
                        "info",
                        "no GPU Operator ClusterPolicy or GPUCluster: only the operand pods that run were checked, "
                        "none against an operator's configuration",
                        "Install the GPU Operator, or ignore this if the GPU stack is managed another way.",
                    ),
                )
            )
        return out

    def _sandbox_failures(self, operands):
        """``{pod name: message}`` of the operand pods' newest FailedCreatePodSandBox event."""
        out = {}
        for summary in operands.values():
            events = [
                e for e in self.pod_events.get(summary["name"], []) if e.get("reason") == "FailedCreatePodSandBox"
            ]
            if events:
                out[summary["name"]] = max(events, key=lambda e: last_seen(e) or "").get("message")
        return out
