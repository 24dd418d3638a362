# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU health by category: each GPU's findings from its NVML facts, and the worst severity per pool."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: Health categories, in report (heat map column) order.
HEALTH_CATEGORIES = ("ecc", "remapped_rows", "xid", "thermal", "other")

SEVERITY_ORDER = {"ok": 0, "warning": 1, "critical": 2}

#: nvidia_gpu_facts health reasons -> (category, severity, explanation).
REASONS = {
    "uncorrectable_ecc_volatile": ("ecc", "critical", "uncorrectable ECC errors since the last reset (Xid 48/94/95)"),
    "uncorrectable_ecc_aggregate": ("ecc", "warning", "uncorrectable ECC errors over the GPU's lifetime"),
    "retired_pages_pending_reset_required": ("ecc", "critical", "retired pages pending: a GPU reset is needed"),
    "row_remap_pending_reset_required": (
        "remapped_rows",
        "critical",
        "a remapped row is pending: a GPU reset is needed (Xid 63)",
    ),
    "row_remap_failure": ("remapped_rows", "critical", "row remapping failed: the GPU needs service (Xid 64)"),
    "gpu_lost": ("xid", "critical", "the GPU fell off the bus (Xid 79)"),
    "hw_thermal_slowdown": ("thermal", "critical", "hardware thermal slowdown"),
    "sw_thermal_slowdown": ("thermal", "warning", "software thermal slowdown"),
    "hw_slowdown": ("thermal", "critical", "hardware slowdown (thermal or power brake)"),
    "hw_power_brake_slowdown": ("other", "critical", "hardware power brake slowdown"),
    "sw_power_cap": ("other", "warning", "clocks held by the software power cap"),
    "mig_mode_change_pending_reset": ("other", "warning", "a MIG mode change waits for a GPU reset"),
    "fabric_not_registered": ("other", "warning", "NVLink fabric registration not completed"),
}


def worse(a, b):
    """The more severe of two severities (ok, warning, critical)."""
    return a if SEVERITY_ORDER.get(a, 0) >= SEVERITY_ORDER.get(b, 0) else b


def gpu_findings(gpu, thermal_warning_c):
    """Health findings of one GPU (NVML facts entry), each ``{category, severity, reason, evidence, gpu}``."""
    out = []
    index = gpu.get("index")
    reasons = list((gpu.get("health") or {}).get("reasons") or [])
    for reason in reasons:
        category, severity, text = REASONS.get(reason, ("xid" if gpu.get("error") else "other", "warning", reason))
        if gpu.get("error") and reason == (gpu.get("error") or {}).get("reason"):
            category, severity = "xid", "critical"
            text = REASONS.get(reason, (None, None, "GPU error %s" % reason))[2]
        out.append({"gpu": index, "category": category, "severity": severity, "reason": reason, "evidence": text})
    rows = gpu.get("remapped_rows") or {}
    if rows.get("uncorrected") and not rows.get("pending") and not rows.get("failure"):
        out.append(
            {
                "gpu": index,
                "category": "remapped_rows",
                "severity": "warning",
                "reason": "remapped_rows_uncorrected",
                "evidence": "%s rows remapped for uncorrectable errors" % rows["uncorrected"],
            }
        )
    temp = gpu.get("temperature_c")
    if isinstance(temp, (int, float)) and temp >= thermal_warning_c:
        if not any(f["category"] == "thermal" for f in out):
            out.append(
                {
                    "gpu": index,
                    "category": "thermal",
                    "severity": "warning",
                    "reason": "temperature_high",
                    "evidence": "%s C, at or above the %s C warning threshold" % (temp, thermal_warning_c),
                }
            )
        else:
            for f in out:
                if f["category"] == "thermal":
                    f["evidence"] += " at %s C" % temp
    return out


def pool_health(rows):
    """Per category: the worst severity, the GPUs affected and the findings count."""
    health = {c: {"severity": "ok", "gpus_affected": 0, "findings": 0} for c in HEALTH_CATEGORIES}
    for r in rows:
        affected = {}
        for f in r["findings"]:
            cell = health[f["category"]]
            cell["severity"] = worse(f["severity"], cell["severity"])
            cell["findings"] += 1
            affected.setdefault(f["category"], set()).add(f["gpu"])
        for category, gpus in affected.items():
            health[category]["gpus_affected"] += len(gpus)
    return health
