# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The validation checks' registry: the layers a finding can name, the checks in the order they run, the outcome
of a check, and the finding every check returns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import in_layer_order, layer_rank

#: Layers in dependency order (the core vocabulary's validation subset); a node's failing layer is the first of
#: these with a finding.
LAYERS = in_layer_order(
    ("driver", "node", "toolkit", "device-plugin", "dra", "gpu-health", "mig", "scheduling", "workload", "monitoring")
)

#: The checks, in the order they run, and what each looks at.
CHECKS = (
    ("host", "NVML on the host sees the GPUs"),
    ("node", "the host's Kubernetes node exists and is Ready"),
    ("upgrade", "no driver upgrade failed or under way; the node runs the driver the operator is set to"),
    ("labels", "GPU labels present (gpu.present, product, count; gpu.present only in DRA mode)"),
    ("allocatable", "extended-resource mode: allocatable nvidia.com/gpu equals the NVML GPU count"),
    ("operands", "GPU Operator operand pods ready"),
    ("dra-plugin", "DRA mode: the DRA kubelet plugin pod ready"),
    ("dra-slices", "DRA mode: the node's ResourceSlices published, complete and current; the DeviceClasses exist"),
    ("dra-devices", "DRA mode: the published GPUs equal NVML's, by count and UUID"),
    ("dra-taints", "DRA mode: no device taint keeps claims from a device"),
    ("mig", "MIG config applied and advertised as requested"),
    ("smoke", "a GPU smoke-test pod passed (through a ResourceClaim in DRA mode)"),
    ("monitoring", "DCGM metrics (Prometheus) or exporter endpoints present"),
)

PASS, FAIL, SKIP = "pass", "fail", "skipped"
#: The verdict of a node someone else took out of service (a remediation system, or a foreign cordon): its owner
#: acts on it, so it is neither a pass nor a failure at some layer.
QUARANTINED = "quarantined"


def finding(check, layer, evidence, fix):
    """One failing check's record: the check, the layer at fault, the evidence and the fix."""
    return {"check": check, "layer": layer, "evidence": evidence, "fix": fix}


def judged_finding(check, judged):
    """The finding of ``check`` for one finding of the shared judgement (``_operator.node_judgement``), its code
    kept."""
    return dict(finding(check, judged["layer"], judged["message"], judged["fix"]), code=judged["code"])


def lowest_layer_first(findings):
    """``findings`` sorted by layer, lowest first (check order within a layer)."""
    return sorted(findings, key=lambda f: layer_rank(f["layer"]))


def failing_layer(findings):
    """The lowest layer with a finding; None without findings."""
    return lowest_layer_first(findings)[0]["layer"] if findings else None
