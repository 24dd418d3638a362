# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``dra`` layer on one node (the shared judgement's) and whether the node uses the device plugin; and
the LISTs of ``resource.k8s.io/v1`` that triage reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.dra_lists import list_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import judge_dra, uses_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import from_judged


def read_dra(client, namespace=None, node=None, page_size=500):
    """The DRA part of a :class:`Snapshot`: nothing when ``resource.k8s.io/v1`` is not served (the first LIST,
    DeviceClasses, answers 404). The DeviceClasses and, for a node, its ResourceSlices; otherwise every
    ResourceSlice and ResourceClaim, and ``namespace``'s ResourceClaimTemplates."""
    classes = list_dra(client, "deviceclasses", page_size=page_size)
    if classes is None:
        return {}
    if node:
        slices = list_dra(client, "resourceslices", page_size=page_size, field_selector="spec.nodeName=%s" % node)
        return {"device_classes": classes, "slices": slices or []}
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


def dra_findings(name, view, context, nvml=None):
    """The ``dra`` findings of a node view (``cluster_view.node_view`` with a DRA index): the shared judgement's
    (``_operator.node_judgement``) on a node that uses DRA, none on another; ``nvml``: its host's NVML facts, when
    known."""
    if not uses_dra(view):
        return []
    return [from_judged(j, name) for j in judge_dra(view, nvml, context)]
