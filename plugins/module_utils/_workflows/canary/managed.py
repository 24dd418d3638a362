# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What the GPU Operator manages on each planned node, and the gate's refusal of a change it would never make: a
driver version on nodes whose driver is preinstalled or disabled, a toolkit, device plugin or MIG setting of an
operand that is disabled. Nodes are grouped by pool in the refusals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DEPLOY_LABEL_PREFIX,
    POOL_LABEL,
)

#: Operands whose settings a chart upgrade may change: (name in messages, ClusterPolicy key holding ``enabled``,
#: the chart value keys that configure it, the component of its node deploy label).
OPERANDS = (
    ("toolkit", "toolkit", ("toolkit",), "container-toolkit"),
    ("device plugin", "devicePlugin", ("devicePlugin",), "device-plugin"),
    ("MIG manager", "migManager", ("migManager", "mig"), "mig-manager"),
)


def _disabled(section):
    return (section or {}).get("enabled") in (False, "false")


def _deploy_label(node, component):
    """``(label, value)`` when the node's deploy label of ``component`` (or of all operands) says not here."""
    labels = labels_of(node)
    for comp in ("operands", component):
        value = labels.get(DEPLOY_LABEL_PREFIX + comp)
        if value not in (None, "true"):
            return DEPLOY_LABEL_PREFIX + comp, value
    return None


def _selects(nvidia_driver, labels):
    selector = (nvidia_driver.get("spec") or {}).get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def driver_unmanaged(node, cp, nvidia_drivers=()):
    """``(why, how to hand the driver to the operator)`` when the operator does not manage the node's driver, else
    None."""
    spec = (cp or {}).get("spec") or {}
    if _disabled(spec.get("driver")):
        return (
            "ClusterPolicy %s has driver.enabled=false (drivers preinstalled on the hosts)" % name_of(cp),
            "set driver.enabled=true in the chart values",
        )
    label = _deploy_label(node, "driver")
    if label:
        return (
            "its nodes carry %s=%s (a preinstalled driver)" % label,
            "label its nodes %s=true" % label[0],
        )
    if (spec.get("driver") or {}).get("useNvidiaDriverCRD") and not any(
        _selects(nvd, labels_of(node)) for nvd in nvidia_drivers
    ):
        return "no NVIDIADriver selects its nodes", "create an NVIDIADriver whose nodeSelector matches them"
    return None


def operand_changes(values, cp):
    """``{operand name: ["key=value", ...]}``: the settings ``values`` (chart values) change on each operand of
    :data:`OPERANDS`, compared with the ClusterPolicy's spec; ``enabled`` is not a change of settings."""
    spec = (cp or {}).get("spec") or {}
    out = {}
    for name, _key, value_keys, _component in OPERANDS:
        for vkey in value_keys:
            section = (values or {}).get(vkey)
            if not isinstance(section, dict):
                continue
            have = spec.get(vkey) or {}
            changed = [
                "%s.%s=%s" % (vkey, k, v) for k, v in sorted(section.items()) if k != "enabled" and have.get(k) != v
            ]
            if changed:
                out.setdefault(name, []).extend(changed)
    return out


def operand_unmanaged(node, cp, key, component, values):
    """``(why, how to enable it)`` when the operand (ClusterPolicy ``key``) does not run on the node after the
    chart values ``values``, else None."""
    spec = (cp or {}).get("spec") or {}
    enables = ((values or {}).get(key) or {}).get("enabled") in (True, "true")
    if _disabled(spec.get(key)) and not enables:
        return (
            "ClusterPolicy %s has %s.enabled=false" % (name_of(cp), key),
            "set %s.enabled=true in the chart values" % key,
        )
    label = _deploy_label(node, component)
    if label:
        return "its nodes carry %s=%s" % label, "label its nodes %s=true" % label[0]
    return None


def switches(cp):
    """``{section: {"enabled": bool}}`` of every ClusterPolicy section that says whether its operand runs: the
    chart values that keep each operand on or off through a chart upgrade (helm resets the others)."""
    spec = (cp or {}).get("spec") or {}
    return {
        key: {"enabled": section["enabled"]}
        for key, section in sorted(spec.items())
        if isinstance(section, dict) and isinstance(section.get("enabled"), bool)
    }


def _names_text(names, most=8):
    shown = ", ".join(names[:most])
    return shown + (" and %d more" % (len(names) - most) if len(names) > most else "")


def _by_pool(nodes, why_of):
    """``{(pool, why, how): [node names]}`` of the nodes for which ``why_of(node)`` gives a reason."""
    groups = {}
    for node in nodes:
        found = why_of(node)
        if found:
            pool = labels_of(node).get(POOL_LABEL) or "(no %s label)" % POOL_LABEL
            groups.setdefault((pool,) + tuple(found), []).append(name_of(node))
    return groups


def refusals(nodes, cp, driver_version=None, values=None, nvidia_drivers=()):
    """``(failures, unmanaged)`` over the planned ``nodes``: one sentence per pool and reason for a change the
    operator would never make, and ``{"driver" | operand name: {node: why}}``."""
    failures, unmanaged = [], {}
    if driver_version:
        groups = _by_pool(nodes, lambda n: driver_unmanaged(n, cp, nvidia_drivers))
        for (pool, why, how), names in sorted(groups.items()):
            unmanaged.setdefault("driver", {}).update(dict.fromkeys(names, why))
            failures.append(
                "the driver change to %s is refused before any write: the GPU Operator does not manage the driver "
                "of pool %s (%s): %s. Upgrade the host driver with your own tooling, or switch the pool to "
                "operator-managed drivers (%s), or exclude its nodes"
                % (driver_version, pool, _names_text(names), why, how)
            )
    changes = operand_changes(values, cp)
    for name, key, _value_keys, component in OPERANDS:
        if name not in changes:
            continue
        groups = _by_pool(nodes, lambda n, k=key, c=component: operand_unmanaged(n, cp, k, c, values))
        for (pool, why, how), names in sorted(groups.items()):
            unmanaged.setdefault(name, {}).update(dict.fromkeys(names, why))
            failures.append(
                "the %s change (%s) is refused before any write: the %s does not run on pool %s (%s): %s. Change it "
                "on the hosts with your own tooling, or enable the operand (%s), or exclude its nodes"
                % (name, ", ".join(changes[name]), name, pool, _names_text(names), why, how)
            )
    return failures, unmanaged
