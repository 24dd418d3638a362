# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Join each GPU host's own facts with the cluster's view of its node, and name the first broken layer.

Layers are checked in the order the stack depends on them: the host's GPUs (NVML), the node's presence in
the cluster, the driver, the container toolkit, the device plugin (pods, then advertised GPUs), and GPU
health. The first layer that fails is the node's verdict; every finding keeps its evidence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: (layer, operand component) in dependency order: a layer is checked only when its operand runs.
OPERAND_LAYERS = (
    ("driver", "driver"),
    ("toolkit", "container-toolkit"),
    ("device-plugin", "device-plugin"),
)


def _operand_finding(layer, component, operands):
    pod = operands.get(component)
    if pod is None:
        return None
    if pod.get("ready"):
        return None
    why = pod.get("waiting_reason") or pod.get("last_termination_reason") or pod.get("phase")
    return {
        "layer": layer,
        "evidence": "%s pod %s is not ready (%s, %s restarts)" % (component, pod.get("name"), why, pod.get("restarts")),
        "fix": "Read the logs of %s and its last termination message." % pod.get("name"),
    }


def node_findings(host, node):
    """Every failing layer of one host and its node, in dependency order."""
    nvml = host.get("nvidia_gpu") or {}
    findings = []
    if not nvml.get("available"):
        findings.append(
            {
                "layer": "driver",
                "evidence": "NVML unavailable on the host: %s" % nvml.get("reason"),
                "fix": nvml.get("hint") or "Check that the NVIDIA driver is loaded on the host.",
            }
        )
    if node is None:
        findings.append(
            {
                "layer": "node",
                "evidence": "no Kubernetes node named %s among the GPU nodes" % host.get("node_name"),
                "fix": "Set k8s_node_name for this host or check that the node joined the cluster.",
            }
        )
        return findings
    operands = node.get("operands") or {}
    for layer, component in OPERAND_LAYERS:
        finding = _operand_finding(layer, component, operands)
        if finding:
            findings.append(finding)
    expected = nvml.get("gpu_count")
    allocatable = (node.get("allocatable") or {}).get("nvidia.com/gpu", 0)
    mig_allocatable = sum(v for k, v in (node.get("allocatable") or {}).items() if k.startswith("nvidia.com/mig-"))
    if nvml.get("available") and not mig_allocatable and allocatable != expected:
        findings.append(
            {
                "layer": "device-plugin",
                "evidence": "node advertises nvidia.com/gpu=%s but NVML counts %s GPUs" % (allocatable, expected),
                "fix": "Check the device plugin pod on this node and the GPUs it marks unhealthy.",
            }
        )
    if nvml.get("health") == "critical":
        reasons = sorted({r for gpu in nvml.get("gpus") or [] for r in (gpu.get("health") or {}).get("reasons") or []})
        findings.append(
            {
                "layer": "gpu-health",
                "evidence": "critical GPU health: %s" % ", ".join(reasons),
                "fix": "Drain the node and reset or replace the affected GPUs.",
            }
        )
    return findings


def fleet_summary(hosts, nodes):
    """One row per host: the node's GPU view, the host's NVML view, and the verdict.

    ``hosts`` maps an inventory host name to ``{node_name, pool, nvidia_gpu}``; ``nodes`` is
    gpu_cluster_info's ``nodes`` (keyed by node name).
    """
    rows = []
    for name in sorted(hosts):
        host = hosts[name]
        node = nodes.get(host.get("node_name") or name)
        nvml = host.get("nvidia_gpu") or {}
        findings = node_findings(host, node)
        rows.append(
            {
                "host": name,
                "node": host.get("node_name") or name,
                "pool": host.get("pool"),
                "nvml_gpus": nvml.get("gpu_count"),
                "driver_version": nvml.get("driver_version"),
                "health": nvml.get("health"),
                "allocatable": (node or {}).get("allocatable", {}),
                "product": ((node or {}).get("gpu") or {}).get("product"),
                "verdict": "fail" if findings else "pass",
                "failing_layer": findings[0]["layer"] if findings else None,
                "findings": findings,
            }
        )
    return {
        "rows": rows,
        "passed": sum(1 for r in rows if r["verdict"] == "pass"),
        "failed": sum(1 for r in rows if r["verdict"] == "fail"),
    }


def summary_lines(summary):
    """A plain-text table of the summary, for the play's output."""
    lines = ["%-22s %-8s %-24s %5s %6s %-8s %s" % ("node", "pool", "product", "nvml", "alloc", "verdict", "layer")]
    for r in summary["rows"]:
        alloc = sum(r["allocatable"].values()) if r["allocatable"] else 0
        lines.append(
            "%-22s %-8s %-24s %5s %6s %-8s %s"
            % (
                r["node"],
                r["pool"] or "-",
                r["product"] or "-",
                r["nvml_gpus"],
                alloc,
                r["verdict"],
                r["failing_layer"] or "-",
            )
        )
    lines.append("%d passed, %d failed" % (summary["passed"], summary["failed"]))
    return lines
