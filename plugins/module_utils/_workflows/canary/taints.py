# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The canary taint on nodes and the toleration of it on the operands (pure list edits, no API calls)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def tolerates(tolerations, key, effect):
    """True if one toleration in the list tolerates a taint ``key:effect`` (any value)."""
    for tol in tolerations or []:
        op = tol.get("operator") or "Equal"
        tol_effect = tol.get("effect")
        if tol_effect and tol_effect != effect:
            continue
        if tol.get("key") in (None, "") and op == "Exists":
            return True
        if tol.get("key") == key and (op == "Exists" or tol.get("value") in (None, "", "true")):
            return True
    return False


def with_toleration(tolerations, key, effect):
    """``(new list, changed)``: ``tolerations`` plus one for the canary taint when none tolerates it."""
    tolerations = list(tolerations or [])
    if tolerates(tolerations, key, effect):
        return tolerations, False
    return tolerations + [{"key": key, "operator": "Exists", "effect": effect}], True


def without_toleration(tolerations, key, effect):
    """``(new list, changed)``: ``tolerations`` without the one :func:`with_toleration` adds."""
    tolerations = list(tolerations or [])
    ours = {"key": key, "operator": "Exists", "effect": effect}
    kept = [t for t in tolerations if t != ours]
    return kept, len(kept) != len(tolerations)


def taints_with(taints, key, effect, value):
    """``(new list, changed)`` with the canary taint present."""
    taints = list(taints or [])
    if any(t.get("key") == key and t.get("effect") == effect for t in taints):
        return taints, False
    return taints + [{"key": key, "value": value, "effect": effect}], True


def taints_without(taints, key, effect):
    """``(new list, changed)`` without the canary taint."""
    taints = list(taints or [])
    kept = [t for t in taints if not (t.get("key") == key and t.get("effect") == effect)]
    return kept, len(kept) != len(taints)


def template_tolerations(daemonset):
    """The tolerations of a DaemonSet's pod template."""
    return (((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("tolerations")
