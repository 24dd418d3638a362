# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The operands check: each GPU Operator operand pod on the node, named at the layer it serves."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import finding

#: Operand component -> layer it belongs to (others, e.g. the validator, are resolved from their evidence).
COMPONENT_LAYERS = {
    "driver": "driver",
    "container-toolkit": "toolkit",
    "device-plugin": "device-plugin",
    "device-plugin-mps": "device-plugin",
    "gpu-feature-discovery": "device-plugin",
    "mig-manager": "mig",
    "dcgm": "monitoring",
    "dcgm-exporter": "monitoring",
    "node-status-exporter": "monitoring",
}
#: The DRA kubelet plugin: the ``dra-plugin`` check owns it (validate/dra.py).
OWNED_ELSEWHERE = ("dra-driver",)

#: The operator-validator's init containers (and their log prefixes) name the component they validate.
VALIDATION_LAYERS = (
    ("driver-validation", "driver"),
    ("toolkit-validation", "toolkit"),
    ("cuda-validation", "workload"),
    ("plugin-validation", "device-plugin"),
)


def _validator_layer(pod):
    """The layer an operator-validator pod names in its last termination (toolkit when it names none)."""
    text = " ".join(str(pod.get(k) or "") for k in ("last_termination_container", "last_termination_message"))
    for marker, layer in VALIDATION_LAYERS:
        if marker in text:
            return layer
    return "toolkit"


def _pod_state(pod):
    why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
    text = "%s pod %s is not ready (%s, %s restarts)" % (
        pod.get("component"),
        pod.get("name"),
        why,
        pod.get("restarts"),
    )
    if pod.get("last_termination_message"):
        text += "; last termination: %s" % pod["last_termination_message"]
    return text


#: Where a stuck operand sandbox points, by how GPUs reach containers: the nvidia runtime handler the toolkit
#: configures, or in NRI plugin mode (``cdi.nriPluginEnabled``) the toolkit pod's NRI plugin (no RuntimeClass).
SANDBOX_FIX = {
    False: "Check the container-toolkit pod and the nvidia runtime handler in the container runtime's "
    "configuration on this node.",
    True: "Check the container-toolkit pod on this node (in NRI plugin mode its NRI plugin injects the GPUs; there "
    "is no RuntimeClass or runtime handler) and that NRI is enabled in the container runtime (gpu_host_facts "
    "container_runtime.config.nri_enabled).",
}


def check_operands(node, sandbox_events=None, nri_plugin=False):
    """Findings for each operand pod that is not ready and each required operand that runs no pod on the node;
    ``nri_plugin``: the ClusterPolicy runs the toolkit's NRI plugin instead of a runtime handler."""
    operands = node.get("operands") or {}
    driver_ok = (operands.get("driver") or {}).get("ready", True)
    findings = []
    for component in sorted(c for c in operands if c not in OWNED_ELSEWHERE):
        pod = dict(operands[component], component=component)
        if pod.get("ready") or pod.get("phase") == "Succeeded":
            continue
        layer = COMPONENT_LAYERS.get(component)
        evidence = _pod_state(pod)
        fix = "Read the logs of %s (kubectl logs --previous) and its events." % pod.get("name")
        if pod.get("waiting_reason") == "ContainerCreating" and component not in ("driver", "container-toolkit"):
            if driver_ok:
                layer = "toolkit"  # operands get their GPUs through the toolkit (runtime handler or NRI plugin)
                event = (sandbox_events or {}).get(pod.get("name"))
                evidence += "; %s" % (event or "its sandbox cannot be created")
                fix = SANDBOX_FIX[bool(nri_plugin)]
        elif layer is None and component == "operator-validator":
            layer = _validator_layer(pod)
        findings.append(finding("operands", layer or "toolkit", evidence, fix))
    for component in [c for c in node.get("operands_missing") or [] if c not in OWNED_ELSEWHERE]:
        findings.append(
            finding(
                "operands",
                COMPONENT_LAYERS[component],
                "nvidia.com/gpu.deploy.%s=true but no %s pod runs on the node" % (component, component),
                "Check the %s DaemonSet (its node selector and tolerations) in the operator namespace." % component,
            )
        )
    return findings
