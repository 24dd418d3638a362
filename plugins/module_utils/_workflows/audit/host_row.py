# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One host's part of a snapshot row: its status, comparable facts, GPUs and health findings, and its node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.dra import dra_summary
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.health import gpu_findings, worse
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import (
    STATUS_FAILED,
    STATUS_NOT_AUDITED,
    STATUS_OK,
    STATUS_UNREACHABLE,
)


def _text(value):
    return None if value in (None, "") else str(value)


def _os_text(os_facts):
    os_facts = os_facts or {}
    if not os_facts.get("id"):
        return None
    return ("%s %s" % (os_facts.get("id"), os_facts.get("version_id") or "")).strip()


def toolkit_text(toolkit):
    """One comparable string for the NVIDIA Container Toolkit config; None when unknown."""
    if not toolkit or toolkit.get("installed") is None:  # installed None: its config directory was unreadable
        return None
    if not toolkit.get("installed"):
        return "not installed"
    parts = ["mode=%s" % (toolkit.get("mode") or "default")]
    if toolkit.get("cdi_default_kind"):
        parts.append("cdi-kind=%s" % toolkit["cdi_default_kind"])
    if toolkit.get("root"):
        parts.append("root=%s" % toolkit["root"])
    parts.append(toolkit.get("config_path") or "")
    return " ".join(p for p in parts if p)


def runtime_text(runtime):
    """One comparable string for the container runtime's GPU-relevant config; None when unknown."""
    if not runtime or not runtime.get("name"):
        return None if not runtime else "none found"
    config = runtime.get("config") or {}
    parts = [runtime["name"]]
    if config.get("version") is not None:
        parts.append("v%s" % config["version"])
    parts.append("default=%s" % (config.get("default_runtime") or "-"))
    parts.append("nvidia=%s" % ("yes" if config.get("nvidia_runtime") else "no"))
    parts.append("cdi=%s" % ("yes" if config.get("cdi_enabled") else "no"))
    return " ".join(parts)


def nvml_mig_layout(gpus):
    """NVML MIG layout: ``mig off``, or ``mig`` and the MIG device count per GPU (``mig 7/7/0``); None without GPUs."""
    if not gpus:
        return None
    if not any((g.get("mig") or {}).get("current") for g in gpus):
        return "mig off"
    return "mig " + "/".join(str(len((g.get("mig") or {}).get("devices") or [])) for g in gpus)


def mig_layout(gpus, node_gpu):
    """MIG layout: the node's ``nvidia.com/mig.config`` label (when any) and NVML's per-GPU MIG devices."""
    label = ((node_gpu or {}).get("mig") or {}).get("config")
    return " | ".join(p for p in (label, nvml_mig_layout(gpus)) if p) or None


def _gpu_row(gpu, findings):
    """One GPU of a row; its health is the worse of NVML's verdict and the audit's own findings (e.g. a hot GPU)."""
    health = (gpu.get("health") or {}).get("status")
    for f in findings:
        health = worse(f["severity"], health or "ok")
    return {
        "index": gpu.get("index"),
        "name": gpu.get("name"),
        "uuid": gpu.get("uuid"),
        "serial": gpu.get("serial"),
        "pci_bus_id": gpu.get("pci_bus_id"),
        "vbios": gpu.get("vbios_version"),
        "temperature_c": gpu.get("temperature_c"),
        "mig_enabled": (gpu.get("mig") or {}).get("current"),
        "mig_devices": len((gpu.get("mig") or {}).get("devices") or []),
        "ecc_volatile_uncorrected": (gpu.get("ecc") or {}).get("volatile_uncorrected"),
        "ecc_aggregate_uncorrected": (gpu.get("ecc") or {}).get("aggregate_uncorrected"),
        "remapped_rows": gpu.get("remapped_rows"),
        "health": health,
        "reasons": [f["reason"] for f in findings],
        "error": (gpu.get("error") or {}).get("reason"),
    }


def node_row(node):
    if node is None:
        return None
    gpu = node.get("gpu") or {}
    alloc = node.get("allocatable") or {}
    mig_alloc = {k: v for k, v in alloc.items() if k.startswith("nvidia.com/mig-")}
    return {
        "name": node.get("name"),
        "ready": node.get("ready"),
        "unschedulable": node.get("unschedulable"),
        "product": gpu.get("product"),
        "label_gpu_count": gpu.get("count"),
        "label_driver_version": gpu.get("driver_version"),
        "label_cuda_version": gpu.get("cuda_runtime_version"),
        "mig_config": (gpu.get("mig") or {}).get("config"),
        "mig_config_state": (gpu.get("mig") or {}).get("config_state"),
        "allocatable_gpus": alloc.get("nvidia.com/gpu"),
        "allocatable_mig": mig_alloc,
        "upgrade_state": node.get("upgrade_state"),
        "operands_ready": node.get("operands_ready"),
        "operands_not_ready": sorted(c for c, s in (node.get("operands") or {}).items() if not _operand_ok(s)),
        "kernel": node.get("kernel_version"),
        "os_image": node.get("os_image"),
        "mode": node.get("mode"),
        "dra": dra_summary(node),
    }


def _operand_ok(summary):
    return bool(summary.get("ready") or summary.get("phase") == "Succeeded")


def host_status(host):
    """(status, message) of one host from its registered fact-task results."""
    results = [r for r in (host.get("host_facts_result"), host.get("nvml_result")) if r is not None]
    if not results:
        return STATUS_NOT_AUDITED, "the fact tasks did not run on this host (excluded by --limit or an earlier stop)"
    for r in results:
        if r.get("unreachable"):
            return STATUS_UNREACHABLE, r.get("msg") or "unreachable"
    for r in results:
        if r.get("failed"):
            return STATUS_FAILED, r.get("msg") or "the fact task failed"
    return STATUS_OK, None


def nvml_facts(host):
    """The host's ``nvidia_gpu`` facts from its registered NVML task; None when it gave none."""
    return ((host.get("nvml_result") or {}).get("ansible_facts") or {}).get("nvidia_gpu")


def host_facts_row(host, node, thermal_warning_c):
    """The ``facts``, ``gpus`` and ``findings`` of one host row (facts None when the host gave none)."""
    status, message = host_status(host)
    hf = ((host.get("host_facts_result") or {}).get("ansible_facts") or {}).get("gpu_host")
    nv = nvml_facts(host)
    if hf is None and nv is None:
        return status, message, None, [], []
    hf = hf or {}
    nv = nv or {}
    gpus = list(nv.get("gpus") or [])
    gpu_rows, findings = [], []
    for gpu in gpus:
        found = gpu_findings(gpu, thermal_warning_c)
        findings.extend(found)
        gpu_rows.append(_gpu_row(gpu, found))
    if nv and not nv.get("available"):
        findings.append(
            {
                "gpu": None,
                "category": "other",
                "severity": "critical",
                "reason": "nvml_%s" % (nv.get("reason") or "unavailable"),
                "evidence": "NVML unavailable (%s): %s" % (nv.get("reason"), nv.get("hint")),
            }
        )
    vbios = sorted({g.get("vbios_version") for g in gpus if g.get("vbios_version")})
    facts = {
        "nvml_available": nv.get("available"),
        "nvml_reason": nv.get("reason"),
        "driver": _text(nv.get("driver_version")) or _text((hf.get("nvidia_driver") or {}).get("version")),
        "cuda": _text(nv.get("cuda_driver_version")),
        "kernel": _text((hf.get("kernel") or {}).get("release")),
        "os": _os_text(hf.get("os")),
        "vbios": ", ".join(vbios) or None,
        "mig_layout": mig_layout(gpus, (node or {}).get("gpu")),
        "mig_enabled": any((g.get("mig") or {}).get("current") for g in gpus),
        "mig_nvml": nvml_mig_layout(gpus),
        "mig_all": bool(gpus) and all((g.get("mig") or {}).get("current") for g in gpus),
        "toolkit": toolkit_text(hf.get("container_toolkit")),
        "runtime": runtime_text(hf.get("container_runtime")),
        "gpu_count": nv.get("gpu_count") if nv else None,
        "gpu_health": nv.get("health"),
        "gpus_degraded": sum(1 for g in gpu_rows if g["health"] in ("warning", "critical")),
        "host_driver_proc": _text((hf.get("nvidia_driver") or {}).get("version")),
        "problems": len(hf.get("problems") or []),
    }
    return status, message, facts, gpu_rows, findings
