# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage: the LISTs of ``resource.k8s.io/v1`` that triage reads (a node's ``dra`` layer is the shared
judgement's, ``_operator.node_judgement``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_lists import list_dra


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
