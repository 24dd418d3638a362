# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU pods on the planned nodes, and the label selectors that pick some of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import meta_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
)

_SET_TERM = re.compile(r"^([^\s!=]+)\s+(in|notin)\s*\(([^)]*)\)$")


def requests_gpu(container):
    """True if a container asks for a GPU (``nvidia.com/gpu``, a shared or MIG GPU resource)."""
    res = container.get("resources") or {}
    return any(
        key.startswith(GPU_RESOURCE) or key.startswith(MIG_RESOURCE_PREFIX)
        for key in list(res.get("limits") or {}) + list(res.get("requests") or {})
    )


def active_gpu_pods(pods, nodes=None):
    """Pods that request GPUs, are bound to one of ``nodes`` (all when None) and have not finished."""
    out = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (nodes is not None and node not in nodes):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if meta_of(pod).get("deletionTimestamp"):
            continue
        if any(requests_gpu(c) for c in (pod.get("spec") or {}).get("containers") or []):
            out.append(pod)
    return out


def _split_terms(text):
    """``text`` split on the commas outside parentheses."""
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_selector(selector):
    """A label selector string as a list of ``(key, op, values)``; supports ``=``, ``==``, ``!=``, ``in``,
    ``notin``, ``key`` and ``!key``."""
    terms = []
    for part in _split_terms((selector or "").strip()):
        m = _SET_TERM.match(part)
        if m:
            values = [v.strip() for v in m.group(3).split(",") if v.strip()]
            terms.append((m.group(1), m.group(2), values))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            terms.append((k.strip(), "!=", [v.strip()]))
        elif "=" in part:
            k, v = part.replace("==", "=").split("=", 1)
            terms.append((k.strip(), "=", [v.strip()]))
        elif part.startswith("!"):
            terms.append((part[1:].strip(), "!", []))
        else:
            terms.append((part, "exists", []))
    return terms


def selector_matches(labels, terms):
    """True if ``labels`` satisfy every term of :func:`parse_selector`."""
    for key, op, values in terms:
        have = labels.get(key)
        if op == "=" and have != values[0]:
            return False
        if op == "!=" and have == values[0]:
            return False
        if op == "in" and have not in values:
            return False
        if op == "notin" and have in values:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!" and key in labels:
            return False
    return True
