# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Helpers for Kubernetes API objects as plain dicts (never the kubernetes client's models)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def meta_of(obj):
    """``metadata`` of ``obj``, ``{}`` when absent."""
    return (obj or {}).get("metadata") or {}


def name_of(obj):
    """``metadata.name`` of ``obj``."""
    return meta_of(obj).get("name")


def namespace_of(obj):
    """``metadata.namespace`` of ``obj``."""
    return meta_of(obj).get("namespace")


def key_of(obj):
    """``namespace/name`` of a namespaced object."""
    return "%s/%s" % (namespace_of(obj), name_of(obj))


def labels_of(obj):
    """``metadata.labels`` of ``obj``, ``{}`` when absent."""
    return meta_of(obj).get("labels") or {}


def annotations_of(obj):
    """``metadata.annotations`` of ``obj``, ``{}`` when absent."""
    return meta_of(obj).get("annotations") or {}


def to_int(value, default=0):
    """``value`` as an int (Kubernetes counts arrive as strings or ints), ``default`` when it is not one."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def is_true(value):
    """A label or annotation value that says true (``"true"``, ``"True"``, ``True``)."""
    return str(value).lower() == "true"
