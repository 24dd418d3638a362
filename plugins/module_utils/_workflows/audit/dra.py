# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The Dynamic Resource Allocation (DRA) side of an audit row, for nodes that use DRA.

From ``gpu_cluster_info``'s node (its ``mode`` and ``dra`` view): a compact summary of what the node's DRA driver
publishes, each NVML GPU of the host marked published or not (by UUID, a MIG device standing for its parent GPU),
and the drift between NVML and the published devices as host/cluster mismatches. A node that does not use DRA gets
none of these; a host without NVML facts (unreachable, failed, NVML unavailable) is unknown, never drift.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import natural_key
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.compat import version_tuple
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import (
    published_against_nvml,
    published_gpus,
    uses_dra,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import blocking

#: The mismatch kinds of NVML against the published devices, in report order.
DRA_KINDS = ("dra_count_vs_nvml", "dra_gpu_unpublished", "dra_device_unknown", "dra_driver_vs_nvml")


def _devices(node):
    return ((node or {}).get("dra") or {}).get("devices") or []


def dra_summary(node):
    """The node's DRA view in brief (``gpu_cluster_info``'s node; None when the node does not use DRA): devices
    by type and product, the physical GPUs they stand for, allocated/free/tainted, the published driver versions,
    the blocking device taints, each pool's generation and completeness, and the view's problems."""
    if node is None or not uses_dra(node):
        return None
    dra = node.get("dra") or {}
    devices = _devices(node)
    return {
        "devices": len(devices),
        "device_types": dict(dra.get("device_types") or {}),
        "products": dict(dra.get("products") or {}),
        "gpus_published": len(published_gpus(devices)),
        "allocated": dra.get("devices_allocated") or 0,
        "free": dra.get("devices_free") or 0,
        "tainted": dra.get("devices_tainted") or 0,
        "driver_versions": sorted({d["driver_version"] for d in devices if d.get("driver_version")}),
        "taints": [
            {"device": d.get("name"), "key": t["key"], "value": t["value"], "effect": t["effect"]}
            for d in devices
            for t in blocking(d.get("taints") or [])
        ],
        "pools": [
            {
                "name": p.get("name"),
                "generation": p.get("generation"),
                "complete": p.get("complete"),
                "slices": len(p.get("slices") or []),
                "stale_slices": len(p.get("stale_slices") or []),
            }
            for p in dra.get("pools") or []
        ],
        "plugin_ready": dra.get("plugin_ready"),
        "problems": list(dra.get("problems") or []),
    }


def published_marks(gpu_rows, node):
    """``gpu_rows`` (the row's GPUs) each with ``dra_published`` and ``dra_devices``: the names of the devices
    published for its UUID (a MIG device for its parent). Both None when the node does not use DRA or the GPU has
    no UUID."""
    published = published_gpus(_devices(node)) if node is not None and uses_dra(node) else None
    out = []
    for g in gpu_rows:
        names = None
        if published is not None and g.get("uuid"):
            names = sorted(published.get(g["uuid"]) or [], key=natural_key)
        out.append(dict(g, dra_published=None if names is None else bool(names), dra_devices=names))
    return out


def _mismatch(kind, host_value, cluster_value, evidence):
    return {"kind": kind, "host_value": host_value, "cluster_value": cluster_value, "evidence": evidence}


def dra_mismatches(facts, gpu_rows, node):
    """NVML against the node's published devices: GPU count, NVML GPUs with no published device, published devices
    whose UUID NVML does not know, published driver versions other than NVML's (compared as versions: the DRA
    driver publishes ``570.124.6`` for NVML's ``570.124.06``). Empty when the node does not use DRA or NVML gave no
    facts."""
    if not facts or not facts.get("nvml_available") or node is None or not uses_dra(node):
        return []
    devices = _devices(node)
    published, missing, unknown = published_against_nvml(devices, [g["uuid"] for g in gpu_rows if g.get("uuid")])
    count = facts.get("gpu_count") or 0
    out = []
    if len(published) != count:
        out.append(
            _mismatch(
                "dra_count_vs_nvml",
                count,
                len(published),
                "NVML counts %d GPU(s), the node's ResourceSlices publish %d" % (count, len(published)),
            )
        )
    if missing:
        out.append(
            _mismatch(
                "dra_gpu_unpublished",
                ", ".join(missing),
                None,
                "no DRA device published for the GPU(s) NVML sees: %s" % ", ".join(missing),
            )
        )
    if unknown:
        names = ", ".join("%s (%s)" % (", ".join(published[u]), u) for u in unknown)
        out.append(
            _mismatch(
                "dra_device_unknown",
                None,
                ", ".join(unknown),
                "published device(s) whose GPU NVML does not know: %s" % names,
            )
        )
    driver = facts.get("driver")
    versions = sorted({d["driver_version"] for d in devices if d.get("driver_version")})
    if driver and any(version_tuple(v) != version_tuple(driver) for v in versions):
        out.append(
            _mismatch(
                "dra_driver_vs_nvml",
                driver,
                ", ".join(versions),
                "host driver %s (NVML), the node's DRA devices publish driverVersion %s"
                % (driver, ", ".join(versions)),
            )
        )
    return out
