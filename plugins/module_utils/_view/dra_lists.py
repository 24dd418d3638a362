# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The paginated LISTs of ``resource.k8s.io/v1`` the DRA views read, through a ``_clients.k8s.K8sClient``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import (
    RESOURCE_GROUP,
    RESOURCE_VERSION,
    DraIndex,
)


def list_dra(client, plural, namespace=None, page_size=500, **selectors):
    """Every ``plural`` (``resourceslices``, ``deviceclasses``, ``resourceclaims``, ``resourceclaimtemplates``),
    filtered by ``label_selector``/``field_selector``; None when the cluster does not serve ``resource.k8s.io/v1``
    (HTTP 404: Kubernetes before 1.34)."""
    return client.list_custom(
        RESOURCE_GROUP, RESOURCE_VERSION, plural, namespace=namespace, page_size=page_size, **selectors
    )


def read_index(client, driver, page_size=500):
    """A :class:`DraIndex` from at most three LISTs: the ResourceSlices of ``driver`` first; the DeviceClasses and
    the ResourceClaims (all namespaces) only when some slice exists (no device, nothing to allocate)."""
    slices = list_dra(client, "resourceslices", page_size=page_size, field_selector="spec.driver=%s" % driver)
    if not slices:
        return DraIndex(slices, driver=driver)
    classes = list_dra(client, "deviceclasses", page_size=page_size)
    claims = list_dra(client, "resourceclaims", page_size=page_size)
    return DraIndex(slices, claims, classes, driver)
