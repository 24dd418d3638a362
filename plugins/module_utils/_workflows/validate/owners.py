# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Who acts on each failing node, and the first command they run: the failures of a fleet validation grouped by
the owner of their failing layer (``_core.layers`` routes), each with its evidence, fix and command."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import layer_rank, owner_of

#: The operand pod whose log tells most about a failing layer (device-plugin: GFD when the labels check failed).
LAYER_COMPONENT = {
    "driver": "driver",
    "toolkit": "container-toolkit",
    "device-plugin": "device-plugin",
    "dra": "dra-driver",
    "mig": "mig-manager",
    "monitoring": "dcgm-exporter",
}
#: Layers whose first look is the node object (events, conditions, taints, capacity against allocatable).
NODE_LAYERS = ("node", "gpu-health", "scheduling", "workload")
#: Waiting reasons of a pod that has not started: its events (describe) say why, it has no log yet.
NOT_STARTED = ("ContainerCreating", "PodInitializing", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError")


def _pod_command(namespace, pod):
    if pod.get("phase") == "Pending" or pod.get("waiting_reason") in NOT_STARTED:
        return "kubectl -n %s describe pod %s" % (namespace, pod["name"])
    return "kubectl -n %s logs %s --all-containers --tail=50" % (namespace, pod["name"])


def fix_command(row, node=None, namespace="gpu-operator"):
    """The first command to run for a failing row (None for a passing one)."""
    layer = row.get("failing_layer")
    if not layer:
        return None
    name = row.get("node")
    checks = [f.get("check") for f in row.get("findings") or [] if f.get("layer") == layer]
    if layer == "driver" and "host" in checks:
        return "ssh %s nvidia-smi" % row.get("host", name)
    if layer == "node" and node is None:
        return "kubectl get nodes -o wide"  # no node of that name: which names are there
    if layer in NODE_LAYERS:
        return "kubectl describe node %s" % name
    component = LAYER_COMPONENT.get(layer)
    if layer == "device-plugin" and checks and all(c == "labels" for c in checks):
        component = "gpu-feature-discovery"
    operands = (node or {}).get("operands") or {}
    if layer == "driver" and component not in operands:
        component = "operator-validator"  # a host-installed driver: the validator's driver-validation says why
    pod = operands.get(component)
    if pod and pod.get("name"):
        return _pod_command(namespace, pod)
    if layer == "monitoring" and node is not None:
        return "kubectl get node %s -L nvidia.com/gpu.deploy.dcgm-exporter" % name
    return "kubectl -n %s get pods -o wide --field-selector spec.nodeName=%s" % (namespace, name)


def failures_by_owner(rows, nodes=None, routes=None, namespace="gpu-operator"):
    """The failing rows grouped by the owner of their failing layer: ``[{owner, layers, failures}]``, the owner of
    the lowest layer first; each failure is ``{node, host, layer, evidence, fix, command}`` (the first finding at
    the failing layer gives the evidence and fix; :func:`fix_command` the command)."""
    groups = {}
    for row in rows:
        layer = row.get("failing_layer")
        if not layer:
            continue
        at_layer = [f for f in row.get("findings") or [] if f.get("layer") == layer]
        first = at_layer[0] if at_layer else {}
        groups.setdefault(owner_of(layer, routes), []).append(
            {
                "node": row.get("node"),
                "host": row.get("host"),
                "layer": layer,
                "evidence": first.get("evidence"),
                "fix": first.get("fix"),
                "command": fix_command(row, (nodes or {}).get(row.get("node")), namespace),
            }
        )
    out = []
    for owner, failures in groups.items():
        failures.sort(key=lambda f: (layer_rank(f["layer"]), f["node"] or ""))
        layers = []
        for f in failures:
            if f["layer"] not in layers:
                layers.append(f["layer"])
        out.append({"owner": owner, "layers": layers, "failures": failures})
    out.sort(key=lambda g: (layer_rank(g["layers"][0]), g["owner"]))
    return out
