# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The cluster-side proof of an upgraded node: its own health (driver label, Ready, allocatable GPUs, validator and
operands, no new Xid event, no DCGM XID errors)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import meta_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import DRIVER_VERSION_LABEL

XID_REASONS = ("XidCriticalError", "GPUXidError")

_METRIC = re.compile(r"^(DCGM_FI_DEV_XID_ERRORS)\{([^}]*)\}\s+([0-9.eE+-]+)\s*$")


def _event_time(ev):
    return ev.get("lastTimestamp") or ev.get("eventTime") or meta_of(ev).get("creationTimestamp") or ""


def xid_events_by_node(events, since):
    """``{node: [Xid events]}`` with a time at or after ``since`` (ISO 8601 UTC strings compare as text), in one
    pass over the Events."""
    out = {}
    for ev in events:
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") != "Node":
            continue
        if ev.get("reason") not in XID_REASONS and "Xid" not in (ev.get("message") or ""):
            continue
        if since and _event_time(ev) < since:
            continue
        out.setdefault(inv.get("name"), []).append(ev)
    return out


def prove_node(view, target_driver, xids, dcgm_xid=None):
    """The cluster-side proof of one upgraded node from its ``cluster_view.node_view``: a list of failures."""
    failures = []
    labels = view.get("labels") or {}
    if target_driver and labels.get(DRIVER_VERSION_LABEL) != target_driver:
        failures.append(
            "driver label %s is %s, not the target %s"
            % (DRIVER_VERSION_LABEL, labels.get(DRIVER_VERSION_LABEL) or "missing", target_driver)
        )
    if not view.get("ready"):
        failures.append("node is not Ready")
    cap_total = sum(v for v in (view.get("capacity") or {}).values() if isinstance(v, int))
    alloc_total = sum(v for v in (view.get("allocatable") or {}).values() if isinstance(v, int))
    if cap_total <= 0:
        failures.append("no GPU capacity advertised")
    elif alloc_total < cap_total:
        failures.append("allocatable GPUs %d below capacity %d" % (alloc_total, cap_total))
    operands = view.get("operands") or {}
    if "operator-validator" not in operands:
        failures.append("no nvidia-operator-validator pod on the node")
    bad = sorted(
        "%s (%s)" % (c, s.get("reason") or s.get("phase"))
        for c, s in operands.items()
        if not (s.get("ready") or s.get("phase") == "Succeeded")
    )
    if bad:
        failures.append("operand pods not ready: " + ", ".join(bad))
    if xids:
        failures.append(
            "new Xid event(s): " + "; ".join((e.get("message") or e.get("reason") or "")[:120] for e in xids)
        )
    if dcgm_xid:
        failures.append("DCGM reports XID errors %s" % dcgm_xid)
    return failures


def dcgm_xid_by_node(text):
    """``{Hostname: [xid values > 0]}`` from a DCGM exporter's Prometheus text."""
    out = {}
    for line in (text or "").splitlines():
        m = _METRIC.match(line.strip())
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if value > 0:
            out.setdefault(labels.get("Hostname"), []).append(int(value))
    return out
