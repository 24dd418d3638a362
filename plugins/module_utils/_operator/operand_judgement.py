# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The part of a node's judgement (``node_judgement``) read from the GPU Operator's operand pods on it (pure): the
``driver`` pod (with the cause its termination, log or events name), the ``toolkit`` (its pod, and operand pods whose
sandbox cannot be created because the runtime has no ``nvidia`` handler), the operator validator (at the layer its
failing validation names), and every other operand (at its component's layer). The device plugin and the DRA kubelet
plugin are judged with the layers they serve."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

CRASH_REASONS = ("CrashLoopBackOff", "Error", "RunContainerError", "CreateContainerError")
IMAGE_REASONS = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName")
NO_RUNTIME = 'no runtime for "nvidia"'

#: Operand component -> the layer it belongs to (the validator is resolved from its failing validation).
COMPONENT_LAYERS = {
    "driver": "driver",
    "container-toolkit": "toolkit",
    "device-plugin-mps": "device-plugin",
    "gpu-feature-discovery": "device-plugin",
    "mig-manager": "mig",
    "dcgm": "monitoring",
    "dcgm-exporter": "monitoring",
    "node-status-exporter": "monitoring",
}
#: Judged with the layer they serve: the device plugin (``device-plugin``), the DRA kubelet plugin (``dra``).
JUDGED_ELSEWHERE = ("device-plugin", "dra-driver")
#: The operator-validator's init containers (and their log prefixes) name the component they validate.
VALIDATION_LAYERS = (
    ("driver-validation", "driver"),
    ("toolkit-validation", "toolkit"),
    ("cuda-validation", "workload"),
    ("plugin-validation", "device-plugin"),
)

#: Driver termination messages -> (what it means, the fix). First match wins.
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

#: Where a stuck operand sandbox points, by how GPUs reach containers: the nvidia runtime handler the toolkit
#: configures, or in NRI plugin mode (``cdi.nriPluginEnabled``) the toolkit pod's NRI plugin (no RuntimeClass).
#: The runtime's word when a container's CDI devices (the GPUs the NVIDIA runtime injects) cannot be resolved.
CDI_FAILURE = re.compile(r"CDI device|inject CDI|CDI spec", re.I)
CDI_FIX = (
    "The NVIDIA runtime resolves GPUs through the CDI spec the toolkit generates (/var/run/cdi/nvidia.yaml): restart "
    "the container-toolkit pod, or regenerate it on the node (nvidia-ctk cdi generate "
    "--output=/var/run/cdi/nvidia.yaml), and check cdi.enabled in the ClusterPolicy."
)
GENERIC_SANDBOX_FIX = (
    "The container runtime cannot create the pod's sandbox for the reason it gives: read the container runtime's log "
    "on the node (journalctl -u containerd), its config (gpu_host_facts container_runtime) and the CNI config."
)
SANDBOX_FIX = {
    False: "The container runtime has no nvidia runtime handler: check the toolkit's CONTAINERD_CONFIG/"
    "CONTAINERD_SOCKET (toolkit.env) for this distribution (k3s, RKE2, MicroK8s use other paths), that RuntimeClass "
    "nvidia exists, then restart the toolkit pod.",
    True: "Check the container-toolkit pod on this node (in NRI plugin mode its NRI plugin injects the GPUs; there "
    "is no RuntimeClass or runtime handler) and that NRI is enabled in the container runtime (gpu_host_facts "
    "container_runtime.config.nri_enabled).",
}


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


def ready(pod):
    """True for an operand pod that is ready or has completed."""
    return bool(pod.get("ready") or pod.get("phase") == "Succeeded")


def _state(pod):
    """``<component> pod <name> is not ready (<why>, <n> restarts)`` and its last termination message."""
    why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
    text = "%s pod %s is not ready (%s, %s restarts)" % (pod["component"], pod.get("name"), why, pod.get("restarts"))
    if pod.get("last_termination_message"):
        text += "; last termination: %s" % pod["last_termination_message"]
    return text


def judge_operands(view, context):
    """The operand findings of a node, lowest layer first (``context``: a ``node_judgement.Context``)."""
    operands = {c: dict(s, component=c) for c, s in (view.get("operands") or {}).items() if c not in JUDGED_ELSEWHERE}
    driver = operands.pop("driver", None)
    out = _driver(view, driver, context) if driver or "driver" in _missing(view) else []
    driver_ok = driver is None or ready(driver)
    sandbox = _sandbox_failures(view.get("operands") or {}, context) if driver_ok else {}
    out.extend(_runtime(view, sandbox, context))
    unresolved = _cdi_failures(view.get("operands") or {}) if driver_ok else {}
    out.extend(_cdi(view, unresolved))
    sandbox = dict(unresolved, **sandbox)  # judged above: not again as not ready
    for component, pod in sorted(operands.items()):
        if ready(pod) or pod["name"] in sandbox:
            continue
        if component == "operator-validator":
            out.append(_validator(pod, context))
            continue
        code = "ToolkitNotReady" if component == "container-toolkit" else "OperandNotReady"
        fix = "Read the logs of %s (kubectl logs -n %s %s --previous) and its events." % (
            pod["name"],
            context.namespace,
            pod["name"],
        )
        if component == "container-toolkit":
            fix = (
                "Read the toolkit pod's log: it configures the container runtime for the nvidia runtime once the "
                "driver is ready."
            )
        layer = COMPONENT_LAYERS.get(component, "toolkit")
        out.append(judged(layer, code, _state(pod), fix, context.pod_details(pod)))
    for component in _missing(view):
        if component in ("driver",) + JUDGED_ELSEWHERE:
            continue
        out.append(
            judged(
                COMPONENT_LAYERS.get(component, "toolkit"),
                "OperandMissing",
                "nvidia.com/gpu.deploy.%s=true but no %s pod runs on the node" % (component, component),
                "Check the %s DaemonSet (its node selector and tolerations) in %s." % (component, context.namespace),
                {"deploy_labels": view.get("deploy") or {}, "taints": view.get("taints") or []},
            )
        )
    return out


def _missing(view):
    return view.get("operands_missing") or []


def _driver(view, pod, context):
    """``driver`` layer: the driver pod the node is labelled for runs and is ready (else why not)."""
    if pod is None:
        return [
            judged(
                "driver",
                "DriverPodMissing",
                "no driver pod on %s although it is labelled nvidia.com/gpu.deploy.driver=true" % node_subject(view),
                "Check the driver DaemonSet in %s (nodeSelector nvidia.com/gpu.deploy.driver=true, tolerations for "
                "the node's taints)." % context.namespace,
                {"deploy_labels": view.get("deploy") or {}, "taints": view.get("taints") or []},
            )
        ]
    if ready(pod):
        return []
    details = context.pod_details(pod)
    term = details.get("last_termination") or {}
    term_message = term.get("message") or pod.get("last_termination_message") or ""
    text = "\n".join(
        [term_message]
        + list(details.get("log_tail") or [])
        + [e.get("message") or "" for e in details.get("events") or []]
    )
    cause, fix = (
        None,
        "Read the driver container's log (kubectl logs -n %s %s -c nvidia-driver-ctr --previous)"
        % (
            context.namespace,
            pod.get("name"),
        ),
    )
    for needles, what, how in DRIVER_CAUSES:
        if any(n in text for n in needles):
            cause, fix = what, how
            break
    waiting = pod.get("waiting_reason")
    if waiting in IMAGE_REASONS:
        code = "DriverImagePull"
        cause = cause or "the driver image for this OS/kernel cannot be pulled"
        fix = "Check driver.repository/version and that <repository>/driver:<version>-<os> exists in the registry."
    elif waiting in CRASH_REASONS or term_message or pod.get("last_termination_reason"):
        code = "DriverCrashLoop"
    else:
        code = "DriverNotReady"
    message = "driver pod %s on %s is %s" % (pod.get("name"), node_subject(view), waiting or pod.get("phase"))
    if pod.get("restarts"):
        message += " (%d restarts)" % pod["restarts"]
    reason = term.get("reason") or pod.get("last_termination_reason")
    if reason:
        message += ", last termination %s" % reason + (
            " (exit %s)" % term["exit_code"] if term.get("exit_code") else ""
        )
    if cause:
        message += ": %s" % cause
    last_line = term_message.strip().splitlines()
    if last_line:
        message += ' - "%s"' % last_line[-1][:200]
    return [judged("driver", code, message, fix, dict(details, cause=cause))]


def _sandbox_failures(operands, context):
    """``{pod name: why its sandbox cannot be created}`` of the operand pods (not the toolkit) that wait in
    ContainerCreating: the GPUs reach their containers through the toolkit."""
    out = {}
    for component, pod in operands.items():
        if component in ("driver", "container-toolkit") or pod.get("waiting_reason") != "ContainerCreating":
            continue
        out[pod["name"]] = pod.get("sandbox_error") or context.sandbox_failures.get(pod["name"])
    return out


def _runtime(view, sandbox, context):
    """``toolkit`` layer: operand pods whose sandbox the runtime cannot create (no ``nvidia`` handler, or another
    sandbox failure, or none reported yet)."""
    if not sandbox:
        return []
    named = sorted(n for n, why in sandbox.items() if why and NO_RUNTIME in why)
    fix = SANDBOX_FIX[bool(context.nri_plugin)]
    if named:
        code, what = "RuntimeNotConfigured", 'no runtime for "nvidia" is configured'
    else:
        code, what = "SandboxNotCreated", "their sandbox cannot be created"
        named = sorted(sandbox)
        if any(sandbox.values()) and not context.nri_plugin:
            fix = GENERIC_SANDBOX_FIX  # the runtime says why, and it is not the missing handler
    reasons = sorted({why for why in sandbox.values() if why})
    return [
        judged(
            "toolkit",
            code,
            "operand pods on %s wait in ContainerCreating, %s (%s)%s"
            % (node_subject(view), what, ", ".join(named), ": %s" % reasons[-1] if reasons else ""),
            fix,
            {"pods": named, "sandbox_failures": reasons[-3:]},
        )
    ]


def _cdi_failures(operands):
    """``{pod name: the runtime's message}`` of operand pods not ready because their containers cannot be created or
    started: their CDI devices do not resolve (the NVIDIA runtime's injection of the GPUs)."""
    found = {}
    for pod in operands.values():
        if ready(pod):
            continue
        # the runtime's word: why it waits (CreateContainerError), else why its last start failed (StartError)
        for message in (pod.get("waiting_message"), pod.get("last_termination_message")):
            if message and CDI_FAILURE.search(message):
                found[pod["name"]] = message
                break
    return found


def _cdi(view, unresolved):
    """``toolkit`` layer: operand pods whose GPUs the runtime cannot inject (the toolkit's CDI spec)."""
    if not unresolved:
        return []
    named = sorted(unresolved)
    return [
        judged(
            "toolkit",
            "CDIDevicesUnresolvable",
            "the container runtime cannot inject the GPUs into operand pods on %s (%s): %s"
            % (node_subject(view), ", ".join(named), unresolved[named[-1]]),
            CDI_FIX,
            {"pods": named, "messages": sorted(set(unresolved.values()))[-3:]},
        )
    ]


def _validator(pod, context):
    """The operator validator: it proves driver, toolkit, CUDA and device plugin in that order; the layer is the
    one its failing validation names (``toolkit`` when it names none)."""
    text = " ".join(str(pod.get(k) or "") for k in ("last_termination_container", "last_termination_message"))
    layer = next((lay for marker, lay in VALIDATION_LAYERS if marker in text), "toolkit")
    return judged(
        layer,
        "ValidatorFailing",
        "operator validator " + _state(pod)[len("operator-validator ") :],
        "The validator proves driver, toolkit, CUDA and device plugin in that order: fix the component its failing "
        "init container names (driver-validation, toolkit-validation, cuda-validation, plugin-validation).",
        context.pod_details(pod),
    )


def node_subject(view):
    """``node NAME`` (``the node`` for a view without a name)."""
    return "node %s" % view["name"] if view.get("name") else "the node"
