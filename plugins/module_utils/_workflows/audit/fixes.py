# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What to do about each code a report shows: health finding reasons, mismatch kinds and row statuses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.nvml import REASONS as NVML_REASONS

_RESET = "Drain the node (kubectl drain), then reset the GPU (nvidia-smi -r -i <index>) or reboot the node"

#: Code -> the fix a person applies.
FIXES = {
    "uncorrectable_ecc_volatile": _RESET + "; if the errors come back, have the GPU replaced.",
    "uncorrectable_ecc_aggregate": "Watch the count: a GPU whose lifetime count keeps growing should be replaced "
    "at the next maintenance window.",
    "retired_pages_pending_reset_required": _RESET + " so that the retired pages take effect.",
    "row_remap_pending_reset_required": _RESET + " so that the remapped row takes effect.",
    "row_remap_failure": "Drain the node and have the GPU replaced: it has no spare rows left (NVIDIA RMA).",
    "remapped_rows_uncorrected": "Keep the GPU in service but watch it; replace it when remapping fails or Xid 64 "
    "appears.",
    "gpu_lost": "Drain the node, read dmesg for Xid 79, power-cycle the node; check the PCIe slot, power and cooling.",
    "hw_thermal_slowdown": "Check the airflow, fans and inlet temperature of the node; move load off it until it "
    "cools.",
    "sw_thermal_slowdown": "Check the cooling of the node and the GPU's temperature limits (nvidia-smi -q -d "
    "TEMPERATURE).",
    "hw_slowdown": "Check the power supply and cooling of the node (nvidia-smi -q -d PERFORMANCE names the cause).",
    "hw_power_brake_slowdown": "The chassis asked the GPU to brake: check the node's power supplies and power capping.",
    "sw_power_cap": "Raise the power limit (nvidia-smi -pl) if the workload needs it, or accept the capped clocks.",
    "mig_mode_change_pending_reset": _RESET + " so that the MIG mode change takes effect (the MIG manager does this).",
    "fabric_not_registered": "Check the nvidia-fabricmanager service and the NVLink switch trays of the node.",
    "temperature_high": "Check the cooling of the node; the GPU runs at or above the audit's warning temperature.",
    "gpu_count_vs_allocatable": "Read the device plugin pod's log on the node: it marks a GPU unhealthy after an "
    "Xid, or an operand is not running.",
    "mig_vs_label": "Read the mig-manager pod's log on the node: the MIG layout it was asked for (nvidia.com/"
    "mig.config) is not the one applied.",
    "driver_vs_label": "Restart the gpu-feature-discovery pod on the node (its label is stale), or finish the "
    "driver upgrade.",
    "dra_count_vs_nvml": "Read the DRA kubelet plugin pod's log on the node: it publishes the GPUs it finds (a lost "
    "GPU, Xid 79, is not published); check the node's ResourceSlices (kubectl get resourceslices --field-selector "
    "spec.nodeName=<node>).",
    "dra_gpu_unpublished": "Read the DRA kubelet plugin pod's log on the node and compare its GPUs with nvidia-smi -L; "
    "restart the plugin pod once the GPU is healthy so that it publishes it again.",
    "dra_device_unknown": "The node publishes a GPU the host does not have: restart the DRA kubelet plugin pod on the "
    "node (a stale slice), or check that k8s_node_name maps the host to the right node.",
    "dra_driver_vs_nvml": "Restart the DRA kubelet plugin pod on the node after a driver upgrade so that it publishes "
    "the running driver's version, or finish the driver upgrade.",
    "node_missing": "Set k8s_node_name for the host, or check that the node joined the cluster.",
    "unreachable": "Check SSH to the host (address, port, keys) and that it is up; the audit keeps it in the report.",
    "failed": "Read the fact task's message; fix the host's Python, NVML library path or permissions.",
    "not_audited": "Run the audit without --limit, or fix the earlier failure that stopped the host's fact tasks.",
    "not_in_inventory": "Add the node's host to the inventory's GPU host group so that its host facts are gathered.",
}

#: Fix of a reason no entry names (an NVML error reason the driver reported).
GENERIC_FIX = "Look the reason up in NVIDIA's Xid and NVML documentation; drain the node if the GPU misbehaves."


def fix_for(code):
    """The fix for ``code``; ``nvml_<reason>`` gets NVML's own hint for that reason."""
    if code in FIXES:
        return FIXES[code]
    if code.startswith("nvml_"):
        hints = dict(NVML_REASONS.values())
        return hints.get(code[len("nvml_") :], GENERIC_FIX)
    return GENERIC_FIX
