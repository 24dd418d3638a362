# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Helpers for Kubernetes API objects as plain dicts (never the kubernetes client's models)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


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


def get_in(d, *keys, default=None):
    """``d[k1][k2]...`` of nested dicts (parsed JSON, YAML, TOML, facts); ``default`` when a level is missing or is
    not a dict, or the value is None."""
    for k in keys:
        if not isinstance(d, dict):
            return default
        d = d.get(k)
    return default if d is None else d


def to_int(value, default=0):
    """``value`` as an int (Kubernetes counts arrive as strings or ints), ``default`` when it is not one."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def is_true(value):
    """A label or annotation value that says true (``"true"``, ``"True"``, ``True``)."""
    return str(value).lower() == "true"


def as_document(value):
    """A JSON document as a dict: ``value`` itself when it is one, parsed when it is JSON text (str or bytes); None
    for anything else - empty or unreadable text, or JSON that is not an object (a previous report that is gone)."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value) if value.strip() else None
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def taint_text(taint):
    """A taint as ``kubectl taint`` writes it: ``key[=value]:effect``."""
    return "%s%s:%s" % (taint.get("key"), "=%s" % taint["value"] if taint.get("value") else "", taint.get("effect"))
