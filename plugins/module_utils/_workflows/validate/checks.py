# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The per-node checks: one host's facts against its node, each check's outcome and the findings, in check order
(see :data:`~registry.CHECKS`)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Optional

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import dra_only, uses_dra
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import (
    Context,
    judge_devices,
    judge_labels,
    judge_nvml,
    judge_ready,
    mig_enabled,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import (
    CDI_FAILURE,
    CDI_FIX,
    judge_operands,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.dra import CHECK_CODES, dra_checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.mig import check_mig
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (
    CHECKS,
    FAIL,
    PASS,
    SKIP,
    finding,
    judged_finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.upgrade import check_upgrade


def _check_host(nvml):
    return [judged_finding("host", j) for j in judge_nvml(nvml)]


def _check_node(host, node):
    if node is None:
        return [
            finding(
                "node",
                "node",
                "no Kubernetes node named %s among the GPU nodes" % host.get("node_name"),
                "Set k8s_node_name for this host or check that the node joined the cluster.",
            )
        ]
    return [judged_finding("node", j) for j in judge_ready(node)]


def _check_labels(node):
    return [judged_finding("labels", j) for j in judge_labels(node)]


def _check_operands(node, evidence):
    context = Context(sandbox_failures=evidence.sandbox_events or {}, nri_plugin=evidence.nri_plugin)
    return [judged_finding("operands", j) for j in judge_operands(node, context)]


def _check_allocatable(nvml, node):
    """The node's GPUs as the device plugin advertises them, against NVML (the shared judgement's device-plugin and
    gpu-health layers)."""
    return [judged_finding("allocatable", j) for j in judge_devices(node, nvml)]


def _check_gpu_health(nvml, monitoring):
    findings = []
    if nvml.get("health") == "critical":
        reasons = sorted({r for gpu in nvml.get("gpus") or [] for r in (gpu.get("health") or {}).get("reasons") or []})
        findings.append(
            finding(
                "host",
                "gpu-health",
                "critical GPU health: %s" % ", ".join(reasons),
                "Drain the node and reset or replace the affected GPUs.",
            )
        )
    xid = (monitoring or {}).get("xid") or {}
    bad = {gpu: code for gpu, code in xid.items() if code}
    if bad:
        findings.append(
            finding(
                "monitoring",
                "gpu-health",
                "DCGM_FI_DEV_XID_ERRORS: %s" % ", ".join("GPU %s Xid %s" % (g, c) for g, c in sorted(bad.items())),
                "Look the Xid up in NVIDIA's Xid catalogue; drain the node and reset or replace the GPU.",
            )
        )
    return findings


def _check_smoke(smoke):
    """The evidence leaves out the pod's name: it is unique per run (and the pod is gone), so a re-run over an
    unchanged node gives the same record."""
    if not smoke or smoke.get("status") == "passed":
        return []
    if CDI_FAILURE.search(smoke.get("reason") or ""):  # its container was created, its GPUs could not be injected
        evidence = "the smoke pod's GPUs cannot be injected: %s" % smoke["reason"]
        return [dict(finding("smoke", "toolkit", evidence, CDI_FIX), code="CDIDevicesUnresolvable")]
    if smoke.get("status") == "pending":
        return [
            finding(
                "smoke",
                "scheduling",
                "the smoke pod stayed Pending: %s" % smoke.get("reason"),
                "Compare the pod's GPU request and tolerations with the node's allocatable GPUs, taints and cordon.",
            )
        ]
    tail = [line for line in (smoke.get("logs") or "").splitlines() if line.strip()][-1:]
    return [
        finding(
            "smoke",
            "workload",
            "the smoke pod failed: %s%s" % (smoke.get("reason"), "; log: %s" % tail[0] if tail else ""),
            "Run the smoke image by hand on the node; check the driver/CUDA compatibility and the GPU itself.",
        )
    ]


def _check_monitoring(nvml, node, monitoring):
    if not monitoring:
        return []
    expected = nvml.get("gpu_count") or (node.get("gpu") or {}).get("count") or 0
    if monitoring.get("source") == "prometheus":
        series = monitoring.get("series") or 0
        if series >= expected:
            return []
        return [
            finding(
                "monitoring",
                "monitoring",
                "Prometheus has DCGM_FI_DEV_GPU_UTIL for %d of %d GPUs of this node" % (series, expected),
                "Check the dcgm-exporter pod on this node, its Service/ServiceMonitor and Prometheus' targets.",
            )
        ]
    # Without Prometheus: the node's exporter pod, the exporter Service, and the node's endpoint where one is listed.
    # EndpointSlices never list loopback or host-network addresses the API rejects, so a Ready pod whose endpoint is
    # not listed passes; a listed endpoint that is not ready fails.
    fix = "Check that the dcgm-exporter pod runs on this node (nvidia.com/gpu.deploy.dcgm-exporter) and is Ready."
    if not monitoring.get("service"):
        return [
            finding(
                "monitoring",
                "monitoring",
                "no nvidia-dcgm-exporter Service in the operator namespace",
                "Check dcgmExporter in the ClusterPolicy; the operator creates the Service with the exporter.",
            )
        ]
    pod = (node.get("operands") or {}).get("dcgm-exporter")
    if pod is None:
        return [finding("monitoring", "monitoring", "no nvidia-dcgm-exporter pod on this node", fix)]
    if monitoring.get("endpoint") is False:
        return [
            finding(
                "monitoring",
                "monitoring",
                "the nvidia-dcgm-exporter endpoint of this node (pod %s) is not ready" % pod.get("name"),
                fix,
            )
        ]
    return []


@dataclass(frozen=True)
class NodeEvidence:
    """What a node is checked by besides its host's NVML view and its cluster view: ``smoke``, its smoke test's
    result (None: not run); ``monitoring``, its DCGM evidence (None: not checked); ``mig_layouts``, the MIG layouts
    by config name; ``sandbox_events``, operand pod name -> its sandbox failure; ``dra_summary``, gpu_cluster_info's
    cluster-wide ``dra`` (its missing DeviceClasses fail every node using DRA); ``nri_plugin``, the ClusterPolicy's
    NRI plugin mode (the toolkit layer is its ready toolkit pod, no runtime handler); ``expected_driver``, the driver
    version the operator is set to for the node (the upgrade check)."""

    smoke: Optional[dict] = None
    monitoring: Optional[dict] = None
    mig_layouts: Optional[dict] = None
    sandbox_events: Optional[dict] = None
    dra_summary: Optional[dict] = None
    nri_plugin: bool = False
    expected_driver: Optional[str] = None


def node_findings(host, node, evidence=NodeEvidence()):
    """Every finding of one host and its node, in check order (see :data:`CHECKS`)."""
    return node_checks(host, node, evidence)[1]


def node_checks(host, node, evidence=NodeEvidence()):
    """``(checks, findings)``: the outcome of each check by name (pass/fail/skipped) and the findings, judged by
    ``evidence`` (:class:`NodeEvidence`). A node in DRA mode (:func:`~node_judgement.dra_only`) runs the DRA checks
    instead of the allocatable one, a node in both modes runs both."""
    nvml = host.get("nvidia_gpu") or {}
    outcome = {}
    findings = []

    def record(name, found, ran=True):
        outcome[name] = FAIL if found else (PASS if ran else SKIP)
        findings.extend(found)

    record("host", _check_host(nvml))
    record("node", _check_node(host, node))
    if node is None:
        for name, _unused in CHECKS[2:]:
            outcome[name] = SKIP
        return outcome, findings
    record("upgrade", check_upgrade(node, evidence.expected_driver))
    in_dra = uses_dra(node)
    record("labels", _check_labels(node))
    if dra_only(node):
        outcome["allocatable"] = SKIP
    else:
        record("allocatable", _check_allocatable(nvml, node), ran=bool(nvml.get("available")) and not mig_enabled(node))
    record("operands", _check_operands(node, evidence))
    for name, found in (
        dra_checks(nvml, node, evidence.dra_summary) if in_dra else [(c, []) for c, _codes in CHECK_CODES]
    ):
        record(name, found, ran=in_dra)
    record("mig", check_mig(nvml, node, evidence.mig_layouts, advertised=not dra_only(node)), ran=mig_enabled(node))
    record("smoke", _check_smoke(evidence.smoke), ran=evidence.smoke is not None)
    record("monitoring", _check_monitoring(nvml, node, evidence.monitoring), ran=evidence.monitoring is not None)
    health = _check_gpu_health(nvml, evidence.monitoring)
    if health:
        findings.extend(health)
        for f in health:
            outcome[f["check"]] = FAIL
    return outcome, findings
