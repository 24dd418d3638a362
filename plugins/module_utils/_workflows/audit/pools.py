# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The pools of a snapshot: hosts grouped by cluster and pool, with their health and their drift."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import pool_health
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import STATUS_OK

#: Fields compared across the hosts of a pool, in report order.
DRIFT_FIELDS = ("driver", "cuda", "kernel", "os", "vbios", "mig_layout", "toolkit", "runtime")


def _majority(values):
    """The most common value (ties: the smallest, so the choice is stable)."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts, key=lambda v: (-counts[v], v))[0]


def pool_drift(rows):
    """For each field whose value differs between the hosts of a pool: the values, the majority, the outliers."""
    out = []
    for field in DRIFT_FIELDS:
        by_value = {}
        for r in rows:
            value = (r["facts"] or {}).get(field)
            if value is not None:
                by_value.setdefault(value, []).append(r["node_name"])
        if len(by_value) < 2:
            continue
        majority = _majority([v for v, names in by_value.items() for _n in names])
        out.append(
            {
                "field": field,
                "majority": majority,
                "values": [{"value": v, "nodes": sorted(n)} for v, n in sorted(by_value.items())],
                "outliers": sorted(n for v, names in by_value.items() if v != majority for n in names),
            }
        )
    return out


def pools(rows):
    """One entry per (cluster, pool): counts, health by category and drift."""
    groups = {}
    for r in rows:
        groups.setdefault((r["cluster"], r["pool"]), []).append(r)
    out = []
    for (cluster, pool), members in sorted(groups.items()):
        out.append(
            {
                "cluster": cluster,
                "pool": pool,
                "nodes": len(members),
                "hosts_ok": sum(1 for r in members if r["status"] == STATUS_OK),
                "gpus": sum((r["facts"] or {}).get("gpu_count") or 0 for r in members),
                "gpus_degraded": sum((r["facts"] or {}).get("gpus_degraded") or 0 for r in members),
                "health": pool_health(members),
                "drift": pool_drift(members),
            }
        )
    return out
