# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU node validation: join each GPU host's own facts with the cluster's view of its node, run the checks in
order, and name the lowest broken layer.

The checks run in the order of the issue (host NVML, node, labels, allocatable against NVML, operand pods - in DRA
mode then the kubelet plugin, ResourceSlices, devices against NVML, device taints -, MIG, smoke pod, monitoring);
every failing check becomes a *finding* with a layer, evidence and a fix. A node's verdict is ``fail`` when it has
any finding, and its ``failing_layer`` is the lowest layer of the stack that failed (:data:`LAYERS`, in dependency
order): a crashed driver also leaves no allocatable GPU and a Pending smoke pod, but the verdict names the driver.
A node that a remediation system or a person took out of service (the node view's ``quarantine`` evidence) is
``quarantined`` instead, whatever its findings: its owner acts on it, not the team of some layer.

Pure functions over plain dicts (facts, ``gpu_cluster_info`` nodes, ``gpu_smoke_test`` results, Prometheus and
EndpointSlice JSON): tested without a cluster, used by the ``fleet_summary`` filter and the ``gpu_validate`` role.
This module joins and judges the fleet; the layers and checks are in ``registry``, the checks in ``checks`` (with
``operands`` and ``mig``), the role's raw inputs are read by ``inputs``, and ``report`` renders the summary.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Optional, Sequence

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.layers import merged_routes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.operand_pods import sandbox_events_by_pod
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    evidence_text,
    owners_of,
    quarantine_fix,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.checks import (
    NodeEvidence,
    node_checks,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.inputs import (
    endpoints_by_node,
    prometheus_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.owners import failures_by_owner
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (
    CHECKS,
    FAIL,
    LAYERS,
    PASS,
    QUARANTINED,
    failing_layer,
    lowest_layer_first,
)


def _verdict(findings, quarantine):
    """``(verdict, failing layer, evidence)`` of one node from its findings and its quarantine evidence."""
    if quarantine:
        return QUARANTINED, None, [evidence_text(quarantine)]
    layer = failing_layer(findings)
    return (FAIL if findings else PASS), layer, [f["evidence"] for f in findings if f["layer"] == layer]


def _quarantine(evidence):
    """Who holds a quarantined node, the evidence and the fix; None when nobody does."""
    if not evidence:
        return None
    return {"owners": owners_of(evidence), "evidence": evidence, "fix": quarantine_fix(evidence)}


def product_of(node, nvml):
    """The GPU product of a node: GPU Feature Discovery's label, else (GPUCluster mode runs no GFD) the one product
    of its DRA devices, else NVML's name of its first GPU; None when nothing says."""
    labelled = ((node or {}).get("gpu") or {}).get("product")
    if labelled:
        return labelled
    products = sorted(((node or {}).get("dra") or {}).get("products") or {})
    if len(products) == 1:
        return products[0]
    gpus = (nvml or {}).get("gpus") or []
    return gpus[0].get("name") if gpus else None


@dataclass(frozen=True)
class FleetInputs:
    """What :func:`fleet_summary` judges the hosts by besides their NVML view and the nodes; the names are the
    filter's and gpu_validate_report's. ``smoke`` is gpu_smoke_test's ``results`` (None: not run); ``monitoring``
    is either ``{"source": "prometheus", "series": <count by node result>, "xid": <xid result>, "node_label": ...}``
    or ``{"source": "endpoints", "service": <the exporter Service exists>, "endpoint_slices": [...]}`` (None: not
    checked); ``sandbox_events`` raw Event dicts; ``dra`` gpu_cluster_info's cluster-wide ``dra``; ``routes``
    layer -> owner over the default routes (``by_owner`` groups the failures by them); ``operator_namespace`` (the
    commands of ``by_owner``); ``nri_plugin`` the ClusterPolicy's NRI plugin mode (``cdi.nriPluginEnabled``: the
    toolkit layer is the ready toolkit pod and its NRI plugin, no RuntimeClass or runtime handler is expected;
    ``toolkit_mode`` says which); ``driver_targets`` the driver version the operator is set to per node name (the
    upgrade check; a node not in it is judged by its upgrade state only)."""

    smoke: Optional[dict] = None
    monitoring: Optional[dict] = None
    mig_layouts: Optional[dict] = None
    sandbox_events: Optional[Sequence[dict]] = None
    dra: Optional[dict] = None
    routes: Optional[dict] = None
    operator_namespace: str = "gpu-operator"
    nri_plugin: bool = False
    driver_targets: Optional[dict] = None


def fleet_summary(hosts, nodes, inputs=FleetInputs()):
    """One row per host: the node's GPU view, the host's NVML view, each check and the verdict.

    ``hosts`` maps an inventory host name to ``{node_name, pool, nvidia_gpu}``; ``nodes`` is gpu_cluster_info's
    ``nodes``; ``inputs`` a :class:`FleetInputs`.
    """
    smoke, monitoring, nri_plugin = inputs.smoke, inputs.monitoring, inputs.nri_plugin
    routes = merged_routes(inputs.routes)
    per_node_monitoring = None
    if monitoring:
        if monitoring.get("source") == "prometheus":
            per_node_monitoring = prometheus_by_node(
                monitoring.get("series"), monitoring.get("xid"), monitoring.get("node_label") or "Hostname"
            )
            empty = {"source": "prometheus", "series": 0, "xid": {}}
        else:
            service = bool(monitoring.get("service"))
            per_node_monitoring = {
                node: dict(entry, service=service)
                for node, entry in endpoints_by_node(monitoring.get("endpoint_slices")).items()
            }
            empty = {"source": "endpoints", "service": service, "endpoint": None}
    events = sandbox_events_by_pod(inputs.sandbox_events)
    rows = []
    for name in sorted(hosts):
        host = hosts[name]
        node_name = host.get("node_name") or name
        node = nodes.get(node_name)
        nvml = host.get("nvidia_gpu") or {}
        mon = None if per_node_monitoring is None else per_node_monitoring.get(node_name, empty)
        smoke_result = None if smoke is None else smoke.get(node_name, {"status": "failed", "reason": "not run"})
        evidence = NodeEvidence(
            smoke=smoke_result,
            monitoring=mon,
            mig_layouts=inputs.mig_layouts,
            sandbox_events=events,
            dra_summary=inputs.dra,
            nri_plugin=nri_plugin,
            expected_driver=(inputs.driver_targets or {}).get(node_name),
        )
        checks, findings = node_checks(host, node, evidence)
        quarantine = (node or {}).get("quarantine") or []
        verdict, layer, evidence = _verdict(findings, quarantine)
        rows.append(
            {
                "host": name,
                "node": node_name,
                "pool": host.get("pool"),
                "nvml_gpus": nvml.get("gpu_count"),
                "driver_version": nvml.get("driver_version"),
                "health": nvml.get("health"),
                "mode": (node or {}).get("mode"),
                "allocatable": (node or {}).get("allocatable", {}),
                "dra_devices": ((node or {}).get("dra") or {}).get("devices_total"),
                "product": product_of(node, nvml),
                "mig_config": (((node or {}).get("gpu") or {}).get("mig") or {}).get("config"),
                # status and reason only: the pod name and duration differ each run (gpu_smoke_test returns them)
                "smoke": None if smoke_result is None else {k: smoke_result.get(k) for k in ("status", "reason")},
                "checks": checks,
                "verdict": verdict,
                "failing_layer": layer,
                "evidence": evidence,
                "quarantine": _quarantine(quarantine),
                "findings": lowest_layer_first(findings),
            }
        )
    by_layer = {}
    for r in rows:
        if r["failing_layer"]:
            by_layer[r["failing_layer"]] = by_layer.get(r["failing_layer"], 0) + 1
    return {
        "rows": rows,
        "passed": sum(1 for r in rows if r["verdict"] == PASS),
        "failed": sum(1 for r in rows if r["verdict"] == FAIL),
        "quarantined": sum(1 for r in rows if r["verdict"] == QUARANTINED),
        "failed_by_layer": by_layer,
        "layers": list(LAYERS),
        "checks": [{"name": n, "description": d} for n, d in CHECKS],
        "toolkit_mode": "nri-plugin" if nri_plugin else "runtime-handler",
        "by_owner": failures_by_owner(rows, nodes, routes, inputs.operator_namespace),
    }


def should_fail(summary, fail_on="any", layers=None):
    """The failure message the play should stop with under ``fail_on``, or None.

    ``any``: any failing node; ``never``: never; ``layers``: a node failing at one of ``layers``. A quarantined node
    never fails the play: its owner acts on it.
    """
    if fail_on == "never":
        return None
    failing = [r for r in summary["rows"] if r["verdict"] == FAIL]
    if fail_on == "layers":
        failing = [r for r in failing if r["failing_layer"] in (layers or ())]
    if not failing:
        return None
    return "%d GPU node(s) failed validation: %s" % (
        len(failing),
        "; ".join("%s at layer %s" % (r["node"], r["failing_layer"]) for r in failing),
    )
