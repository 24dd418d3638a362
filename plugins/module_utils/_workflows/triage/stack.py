# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.


"""GPU triage layers 1-3 on one node: driver, toolkit and validator, device plugin advertising (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    cluster_policy_view,
    is_gpu_node,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    CRASH_REASONS,
    IMAGE_REASONS,
    NO_RUNTIME,
    _event_evidence,
    _name,
    _tail,
    finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    node_requested,
)

DRIVER_CAUSES = (
    (
        ("kernel-headers", "Could not resolve Linux kernel version", "kernel-devel"),
        "kernel headers for the running kernel cannot be found",
        "Make the kernel headers/devel packages for the node's kernel reachable from the driver container "
        "(package repositories, proxy), or use precompiled driver images (driver.usePrecompiled) and pin the kernel.",
    ),
    (
        ("nouveau",),
        "the nouveau driver holds the GPU",
        "Blacklist nouveau on the node (blacklist nouveau; options nouveau modeset=0), rebuild the initramfs "
        "and reboot.",
    ),
    (
        ("unsigned module", "Key was rejected"),
        "Secure Boot rejects the unsigned kernel module",
        "Use a signed host-installed driver (driver.enabled=false) or signed precompiled driver images, or turn "
        "Secure Boot off on the node.",
    ),
    (
        ("driver is in use", "already loaded"),
        "a host driver is loaded or the GPUs are in use",
        "Label the node nvidia.com/gpu.deploy.driver=false (host driver) or stop the GPU clients before the "
        "driver container loads its modules.",
    ),
)


# --------------------------------------------------------------------------------------------------
# Layers 1-3: the GPU stack on one node


def _container_failure(pod):
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


class NodeStack:
    """Layers 1-3 for every node, from the operand pods and their events (computed once per node)."""

    def __init__(self, snap):
        self.snap = snap
        self.policy = cluster_policy_view(snap.cluster_policies)
        self.by_node, _unused = operands_by_node(snap.operator_pods)
        self.raw_pods = {_name(p): p for p in snap.operator_pods}
        self.pod_events = {}
        for event in snap.operator_events:
            obj = event.get("involvedObject") or {}
            if obj.get("kind") == "Pod":
                self.pod_events.setdefault(obj.get("name"), []).append(event)
        self.node_events = {}
        for event in snap.node_events:
            obj = event.get("involvedObject") or {}
            if obj.get("kind") == "Node":
                self.node_events.setdefault(obj.get("name"), []).append(event)
        self.requested = node_requested(snap.bound_pods)
        self.nodes = {_name(n): n for n in snap.nodes}
        self._cache = {}

    def view(self, name):
        node = self.nodes[name]
        view = node_view(node, self.by_node.get(name))
        view["requested"] = dict(self.requested.get(name, {}))
        view["free"] = {
            k: (v if isinstance(v, int) else 0) - view["requested"].get(k, 0) for k, v in view["allocatable"].items()
        }
        return view

    def findings(self, name):
        if name not in self._cache:
            self._cache[name] = self._walk(name)
        return self._cache[name]

    # -- helpers ---------------------------------------------------------------------------------

    def _pod_evidence(self, summary, with_log=True):
        pod = self.raw_pods.get(summary["name"]) or {}
        out = {
            "pod": "%s/%s" % (self.snap.operator_namespace, summary["name"]),
            "phase": summary["phase"],
            "ready": summary["ready"],
            "restarts": summary["restarts"],
            "waiting_reason": summary["waiting_reason"],
        }
        failure = _container_failure(pod)
        if failure:
            out["container"] = failure["container"]
            out["waiting_message"] = failure["waiting_message"]
            out["last_termination"] = failure["last_termination"]
        events = sorted(self.pod_events.get(summary["name"], []), key=lambda e: _event_evidence(e)["last_seen"] or "")
        out["events"] = [_event_evidence(e) for e in events if e.get("type") == "Warning"][-3:]
        if with_log:
            log = self.snap.logs.get(summary["name"])
            if log is not None:
                if log.get("error"):
                    out["log_error"] = log["error"]
                else:
                    out["log_tail"] = _tail(log.get("text"), self.snap.log_lines)
        return out

    def _walk(self, name):
        view = self.view(name)
        operands = view["operands"]
        out = []
        policy = self.policy
        managed = policy is not None

        # 1. driver: node, GPU presence, driver pod
        if not view["ready"]:
            cond = view["conditions"].get("Ready", {})
            out.append(
                finding(
                    "driver",
                    "NodeNotReady",
                    "error",
                    "node %s is NotReady (%s: %s)" % (name, cond.get("reason"), cond.get("message")),
                    "Bring the kubelet back (check the node's container runtime and network); nothing schedules "
                    "on a NotReady node.",
                    {"condition": cond},
                    nodes=[name],
                )
            )
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
        elif policy["driver"].get("enabled") is False or driver_mode in ("false", "pre-installed"):
            pass  # host-installed driver: no driver pod to check
        else:
            driver = operands.get("driver")
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
                out.append(self._driver_finding(name, driver))

        # 2. toolkit and validator
        if managed:
            sandbox = []
            for component, summary in sorted(operands.items()):
                for event in self.pod_events.get(summary["name"], []):
                    if event.get("reason") == "FailedCreatePodSandBox" and NO_RUNTIME in (event.get("message") or ""):
                        sandbox.append((component, summary["name"], event))
            toolkit = operands.get("container-toolkit")
            if toolkit is not None and not toolkit["ready"]:
                out.append(
                    finding(
                        "toolkit_validator",
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
                        "toolkit_validator",
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
                            "events": [_event_evidence(s[2]) for s in sandbox][-3:],
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
                        "toolkit_validator",
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

        # 3. device plugin advertising
        out.extend(self._device_plugin(name, view, managed))
        return out

    def _driver_finding(self, name, driver):
        evidence = self._pod_evidence(driver)
        term = evidence.get("last_termination") or {}
        text = "\n".join(
            [term.get("message") or ""]
            + (evidence.get("log_tail") or [])
            + [e["message"] or "" for e in evidence["events"]]
        )
        cause, fix = (
            None,
            (
                "Read the driver container's log (kubectl logs -n %s %s -c nvidia-driver-ctr --previous)"
                % (self.snap.operator_namespace, driver["name"])
            ),
        )
        for needles, what, how in DRIVER_CAUSES:
            if any(n in text for n in needles):
                cause, fix = what, how
                break
        waiting = driver["waiting_reason"]
        if waiting in IMAGE_REASONS:
            reason = "DriverImagePull"
            cause = cause or "the driver image for this OS/kernel cannot be pulled"
            fix = "Check driver.repository/version and that <repository>/driver:<version>-<os> exists in the registry."
        elif waiting in CRASH_REASONS or term:
            reason = "DriverCrashLoop"
        else:
            reason = "DriverNotReady"
        message = "driver pod %s on %s is %s" % (driver["name"], name, waiting or driver["phase"])
        if driver["restarts"]:
            message += " (%d restarts)" % driver["restarts"]
        if term.get("reason"):
            message += ", last termination %s (exit %s)" % (term["reason"], term.get("exit_code"))
        if cause:
            message += ": %s" % cause
        last_line = (term.get("message") or "").strip().splitlines()
        if last_line:
            message += ' - "%s"' % last_line[-1][:200]
        evidence["cause"] = cause
        return finding("driver", reason, "error", message, fix, evidence, nodes=[name])

    def _device_plugin(self, name, view, managed):
        out = []
        expected = view["gpu"]["count"] if isinstance(view["gpu"]["count"], int) else None
        cap_gpu = view["capacity"].get(GPU_RESOURCE) or 0
        alloc_gpu = view["allocatable"].get(GPU_RESOURCE) or 0
        mig_cap = sum(
            v for k, v in view["capacity"].items() if k.startswith(MIG_RESOURCE_PREFIX) and isinstance(v, int)
        )
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
        looks_gpu = is_gpu_node(self.nodes[name]) or bool(expected)
        if not looks_gpu:
            return out
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
                    "(MIG strategy, sharing)." % (self.snap.operator_namespace, plugin["name"] if plugin else "<pod>")
                )
            out.append(finding("device_plugin", reason, "error", msg, fix, evidence, nodes=[name]))
        elif isinstance(cap_gpu, int) and isinstance(alloc_gpu, int) and alloc_gpu < cap_gpu:
            xid = [
                _event_evidence(e)
                for e in self.node_events.get(name, [])
                if "Xid" in (e.get("reason") or "") or "Xid" in (e.get("message") or "")
            ]
            evidence["events"] = xid[-3:]
            out.append(
                finding(
                    "device_plugin",
                    "UnhealthyGPUs",
                    "warning",
                    "node %s advertises %d of %d GPUs: %d marked unhealthy"
                    % (name, alloc_gpu, cap_gpu, cap_gpu - alloc_gpu),
                    "Look for Xid errors (dmesg, DCGM_FI_DEV_XID_ERRORS); Xid 79 (fallen off the bus) needs a reset "
                    "or reboot of the node.",
                    evidence,
                    nodes=[name],
                )
            )
        return out
