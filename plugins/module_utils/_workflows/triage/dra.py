# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``dra`` layer on one node: the DRA driver's kubelet plugin, the node's ResourceSlices and pool
generation, device taints (pure); and the LISTs of ``resource.k8s.io/v1`` that triage reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_lists import list_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_view import PLUGIN_COMPONENT, blocking
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    device_taint_fix,
    finding,
    taint_text,
)


def read_dra(client, namespace=None, node=None, page_size=500):
    """The DRA part of a :class:`Snapshot`: nothing when ``resource.k8s.io/v1`` is not served (the first LIST,
    DeviceClasses, answers 404). For a node, its ResourceSlices only; otherwise every ResourceSlice and
    ResourceClaim, and ``namespace``'s ResourceClaimTemplates."""
    if node:
        slices = list_dra(client, "resourceslices", page_size=page_size, field_selector="spec.nodeName=%s" % node)
        return {} if slices is None else {"slices": slices}
    classes = list_dra(client, "deviceclasses", page_size=page_size)
    if classes is None:
        return {}
    return {
        "device_classes": classes,
        "slices": list_dra(client, "resourceslices", page_size=page_size) or [],
        "claims": list_dra(client, "resourceclaims", page_size=page_size) or [],
        "claim_templates": list_dra(client, "resourceclaimtemplates", namespace=namespace, page_size=page_size)
        if namespace
        else [],
    }


def uses_device_plugin(view):
    """True when GPUs of the node are meant to reach pods through the device plugin (its deploy label, its pod,
    or advertised GPUs); a DRA-only node is judged at the ``dra`` layer instead."""
    dra = view["dra"]
    if not (dra["expected"] or dra["devices_total"] or dra["pools"]):
        return True
    return bool(
        view["deploy"].get("device-plugin") == "true" or "device-plugin" in view["operands"] or view["capacity"]
    )


def dra_findings(name, view, pod_evidence, operator_namespace):
    """The ``dra`` findings of a node view (``cluster_view.node_view`` with a DRA index); ``pod_evidence`` turns an
    operand summary into evidence."""
    dra = view["dra"]
    out = []
    plugin = view["operands"].get(PLUGIN_COMPONENT)
    if plugin is not None and not dra["plugin_ready"]:
        out.append(
            finding(
                "dra",
                "DraPluginNotReady",
                "error",
                "DRA kubelet plugin pod %s on %s is not ready (%s): the kubelet cannot prepare the claims allocated "
                "there, so their pods stay ContainerCreating (FailedPrepareDynamicResources)"
                % (plugin["name"], name, plugin["waiting_reason"] or plugin["phase"]),
                "Read its log (kubectl logs -n %s %s --previous): the plugin needs the NVIDIA driver loaded (NVML) and "
                "CDI; fix the driver layer first, then delete the pod so that its DaemonSet restarts it."
                % (operator_namespace, plugin["name"]),
                pod_evidence(plugin),
                nodes=[name],
            )
        )
    elif plugin is None and view["deploy"].get(PLUGIN_COMPONENT) == "true":
        out.append(
            finding(
                "dra",
                "DraPluginMissing",
                "error",
                "no DRA kubelet plugin pod on %s although it is labelled nvidia.com/gpu.deploy.dra-driver=true" % name,
                "Check the nvidia-dra-driver-kubelet-plugin DaemonSet in %s (nodeSelector, tolerations for the node's "
                "taints)." % operator_namespace,
                {"deploy_labels": view["deploy"], "taints": view["taints"]},
                nodes=[name],
            )
        )
    evidence = {
        "pools": dra["pools"],
        "devices_total": dra["devices_total"],
        "plugin_pod": dra["plugin_pod"],
        "plugin_ready": dra["plugin_ready"],
    }
    if dra["expected"] and not dra["pools"]:
        out.append(
            finding(
                "dra",
                "NoResourceSlice",
                "error",
                "node %s publishes no ResourceSlice of driver %s: no claim can get a device there"
                % (name, dra["driver"]),
                "The kubelet plugin publishes the node's devices once it has registered: read its log; deleting the "
                "plugin pod makes it start over and publish again.",
                evidence,
                nodes=[name],
            )
        )
    for pool in dra["pools"]:
        if not pool["complete"]:
            out.append(
                finding(
                    "dra",
                    "PoolIncomplete",
                    "error",
                    "pool %s on %s is incomplete: generation %d announces %d ResourceSlice(s) but %d exist (%s), so "
                    "the scheduler allocates none of its devices%s"
                    % (
                        pool["name"],
                        name,
                        pool["generation"],
                        pool["resource_slice_count"],
                        len(pool["slices"]),
                        ", ".join(pool["slices"]),
                        "; left from an older generation: %s" % ", ".join(pool["stale_slices"])
                        if pool["stale_slices"]
                        else "",
                    ),
                    "The driver stopped half-way through publishing: restart its kubelet plugin on %s (delete the "
                    "pod) so that it publishes a complete new generation." % name,
                    evidence,
                    nodes=[name],
                )
            )
    tainted = [(d["name"], t) for d in dra["devices"] for t in blocking(d["taints"])]
    if tainted:
        out.append(
            finding(
                "dra",
                "DeviceTainted",
                "warning",
                "%d device(s) on %s are tainted, and only claims that tolerate the taint get them: %s"
                % (len(tainted), name, ", ".join("%s %s" % (d, taint_text(t)) for d, t in tainted)),
                device_taint_fix([taint_text(t) for _d, t in tainted]),
                {"tainted": [{"device": d, "taint": t} for d, t in tainted]},
                nodes=[name],
            )
        )
    return out
