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

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    cluster_policy_view,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_view import DraIndex, missing_classes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import Context, judge_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    CRASH_REASONS,
    IMAGE_REASONS,
    NO_RUNTIME,
    event_evidence,
    finding,
    from_judged,
    last_seen,
    tail_lines,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.driver import driver_finding
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    node_requested,
)


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
        managed = self.policy is not None
        context = Context(
            classes_missing=missing_classes(self.gpu_dra, [view]),
            namespace=self.snap.operator_namespace,
            pod_details=self._pod_evidence,
            xid_events=xid_events(self.node_events.get(name, [])),
        )
        out = self._driver(name, view, managed)
        if managed:
            out.extend(self._toolkit(name, view["operands"]))
        out.extend(from_judged(j, name) for j in judge_node(view, self.snap.nvml.get(name), context))
        return out

    def _driver(self, name, view, managed):
        """``driver`` layer: its GPUs are present, its driver pod (when the operator runs one)."""
        out = []
        if view["gpu"]["present"] is False:
            out.append(
                finding(
                    "driver",
                    "GPUNotPresent",
                    "error",
                    "node %s has nvidia.com/gpu.present=false: the operator no longer sees its GPUs" % name,
                    "Check the GPUs on the host (lspci -d 10de:, dmesg for Xid/fallen off the bus) and reboot or "
                    "service the node.",
                    {"labels": view["labels"]},
                    nodes=[name],
                )
            )
        driver_mode = view["deploy"].get("driver")
        if not managed:
            out.append(
                finding(
                    "driver",
                    "NoClusterPolicy",
                    "info",
                    "no GPU Operator ClusterPolicy: driver, toolkit and device plugin pods were not checked",
                    "Install the GPU Operator, or ignore this if the GPU stack is managed another way.",
                    nodes=[name],
                )
            )
        elif self.policy["driver"].get("enabled") is False or driver_mode in ("false", "pre-installed"):
            pass  # host-installed driver: no driver pod to check
        else:
            driver = view["operands"].get("driver")
            if driver is None:
                out.append(
                    finding(
                        "driver",
                        "DriverPodMissing",
                        "error",
                        "no driver pod on node %s although the ClusterPolicy deploys the driver" % name,
                        "Check the driver DaemonSet in %s (nodeSelector nvidia.com/gpu.deploy.driver=true, "
                        "tolerations for the node's taints)." % self.snap.operator_namespace,
                        {"deploy_labels": view["deploy"], "taints": view["taints"]},
                        nodes=[name],
                    )
                )
            elif not (driver["ready"] or driver["phase"] == "Succeeded"):
                out.append(driver_finding(name, driver, self._pod_evidence(driver), self.snap.operator_namespace))
        return out

    def _toolkit(self, name, operands):
        """``toolkit`` layer: the container toolkit pod, the ``nvidia`` runtime handler, the operator validator."""
        out = []
        sandbox = []
        for component, summary in sorted(operands.items()):
            for event in self.pod_events.get(summary["name"], []):
                if event.get("reason") == "FailedCreatePodSandBox" and NO_RUNTIME in (event.get("message") or ""):
                    sandbox.append((component, summary["name"], event))
        toolkit = operands.get("container-toolkit")
        if toolkit is not None and not toolkit["ready"]:
            out.append(
                finding(
                    "toolkit",
                    "ToolkitNotReady",
                    "error",
                    "container toolkit pod %s on %s is not Ready (%s)"
                    % (toolkit["name"], name, toolkit["waiting_reason"] or toolkit["phase"]),
                    "Read the toolkit pod's log; it must configure the container runtime (containerd/CRI-O) "
                    "for the nvidia runtime after the driver is ready.",
                    self._pod_evidence(toolkit),
                    nodes=[name],
                )
            )
        if sandbox:
            out.append(
                finding(
                    "toolkit",
                    "RuntimeNotConfigured",
                    "error",
                    'pods on %s fail with FailedCreatePodSandBox: no runtime for "nvidia" is configured (%s)'
                    % (name, ", ".join(sorted({s[1] for s in sandbox}))),
                    "The container runtime has no nvidia handler: check the toolkit's CONTAINERD_CONFIG/"
                    "CONTAINERD_SOCKET (toolkit.env) for this distribution (k3s, RKE2, MicroK8s use other "
                    "paths), that RuntimeClass nvidia exists, then restart the toolkit pod.",
                    {
                        "toolkit_pod": toolkit and toolkit["name"],
                        "toolkit_ready": toolkit and toolkit["ready"],
                        "events": [event_evidence(s[2]) for s in sandbox][-3:],
                    },
                    nodes=[name],
                )
            )
        validator = operands.get("operator-validator")
        if validator is not None and not validator["ready"] and not sandbox:
            evidence = self._pod_evidence(validator)
            term = evidence.get("last_termination") or {}
            out.append(
                finding(
                    "toolkit",
                    "ValidatorFailing",
                    "error",
                    "operator validator %s on %s is %s%s"
                    % (
                        validator["name"],
                        name,
                        validator["waiting_reason"] or validator["phase"],
                        ": %s" % term["message"] if term.get("message") else "",
                    ),
                    "The validator proves driver, toolkit, CUDA and device plugin in that order: fix the "
                    "component its failing init container names (driver-validation, toolkit-validation, "
                    "cuda-validation, plugin-validation).",
                    evidence,
                    nodes=[name],
                )
            )
        return out
