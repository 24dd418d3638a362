# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The plan step (read-only): the target, the canary pool and the waves (or the stored record's, to resume), the
tolerations prepare will set, and the gate."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.driver_daemonsets import state_refusals
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    gpu_labels,
    is_gpu_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import markers
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.cuda import cuda_image_rules
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.disruption import (
    eviction_limit_failure,
    predict,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import crd_mode
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.gate import Cluster, gate
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.managed import switches
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.quarantine import (
    budget,
    failures,
    quarantined,
    report,
    set_aside,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    PHASE_ABORTED,
    PHASE_DONE,
    PHASE_IN_PROGRESS,
    UNFINISHED,
    WAVE_PENDING,
    new_record,
    next_wave,
    same_target,
    target_text,
    wave_nodes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import utc_now
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import (
    template_tolerations,
    with_toleration,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.waves import plan_waves, select


def running_drivers(nodes):
    """``{driver version: GPU node count}``: the drivers the GPU nodes run, as their GFD labels say (a node without
    the label is left out: its driver is not known)."""
    out = {}
    for node in nodes:
        version = gpu_labels(labels_of(node))["driver_version"] if is_gpu_node(node) else None
        if version:
            out[version] = out.get(version, 0) + 1
    return out


def target_and_source(driver_version, chart_version, cp, nodes=()):
    """``(target, source)``: the versions asked for, and those the ClusterPolicy names now (what a rollback
    restores) with the drivers the GPU nodes run (``running``; the ClusterPolicy's driver may run nowhere)."""
    spec = (cp or {}).get("spec") or {}
    chart = labels_of(cp).get("helm.sh/chart", "")
    source = {
        "driver_version": (spec.get("driver") or {}).get("version") or None,
        "chart_version": chart.rsplit("-", 1)[-1] if "-v" in chart else None,
        "running": running_drivers(nodes),
    }
    target = {"driver_version": driver_version or None, "chart_version": chart_version or None}
    return target, source


def _resume_or_start(session, options, nodes, target, source, found):
    """``(record, resumed)``: the stored record of this target (the nodes quarantined since set aside from its
    waves that have not started), or a new one for the nodes that ``options`` selects (``found``: the quarantined
    ones, in none)."""
    record = session.read_record()
    resumed = same_target(record, target) and record.get("phase") in (PHASE_IN_PROGRESS, PHASE_ABORTED, PHASE_DONE)
    if record and not resumed and record.get("phase") in UNFINISHED:
        raise PlanError(
            "ConfigMap %s/%s holds an unfinished canary upgrade to %s (phase %s); finish it or roll it back "
            "(step=rollback, or gpu_canary_upgrade_action=rollback with the role; no target needed) before "
            "starting one to %s"
            % (session.ns, session.cm_name, target_text(record.get("target")), record.get("phase"), target_text(target))
        )
    if resumed:
        set_aside(record, found)
        return record, True
    canary, rest, excluded = select(
        nodes, options.canary_nodes, options.canary_selector, options.exclude, quarantined=found
    )
    waves_plan, unplanned = plan_waves(canary, rest, options.waves)
    taint = {"key": session.taint_key, "effect": session.taint_effect}
    now = utc_now(session.clock)
    left_out = {"unplanned": unplanned, "excluded": excluded, "quarantined": found}
    return new_record(target, source, taint, waves_plan, left_out, now), False


def _tolerations(session, cp):
    """The tolerations prepare leaves on the operands and on the NFD worker."""
    key, effect = session.taint_key, session.taint_effect
    dsspec = (cp.get("spec") or {}).get("daemonsets") or {}
    workers = [ds for ds in session.nfd_daemonsets() if labels_of(ds).get("role") == "worker"]
    return {
        "daemonsets": with_toleration(dsspec.get("tolerations"), key, effect)[0],
        "nfd_worker": with_toleration(template_tolerations(workers[0]), key, effect)[0] if workers else [],
    }


def plan(session, options):
    """Read the cluster and the record; returns ``(plan, record, nodes, cluster policy)`` for ``options`` (a
    :class:`.CanaryOptions`): the plan says what every step will do and holds the gate (``chart_values``: those of a
    chart upgrade, which the gate checks against the operands the operator runs). GPU nodes someone else quarantined
    (the known remediation markers and ``quarantine_markers``, or a foreign cordon) are left out of the waves and
    reported in ``foreign_quarantine`` with how much of ``maxUnavailable`` (``upgrade_policy`` over the
    ClusterPolicy's) they use; with ``foreign_quarantine="fail"`` the gate refuses them. The plan holds the disruption
    of each planned node (:mod:`.disruption`; the gate fails when it evicts more than ``max_evicted_workloads`` GPU
    workload pods); a new record keeps the nodes whose driver restarts in place: the waves evict nothing there."""
    cuda_image_rules(options.cuda_images)  # a bad rule fails before any request
    nodes = session.nodes()
    cp = session.cluster_policy()
    if cp is None:
        raise PlanError("no ClusterPolicy in the cluster: install the GPU Operator first (gpu_operator_install role)")
    target, source = target_and_source(options.driver_version, options.chart_version, cp, nodes)
    if not target["driver_version"] and not target["chart_version"]:
        raise PlanError("nothing to upgrade: set driver_version, chart_version or both")
    found = quarantined(nodes, markers(options.quarantine_markers))
    record, resumed = _resume_or_start(session, options, nodes, target, source, found)
    if resumed:
        source = record.get("from") or source
    waves_plan = [{"index": w["index"], "name": w["name"], "nodes": w["nodes"]} for w in record["waves"]]
    planned = [n for w in waves_plan for n in w["nodes"]]
    tolerations = _tolerations(session, cp)
    budget_now = budget(nodes, found, cp, options.upgrade_policy)
    pending = wave_nodes(record, skip_proven=True)
    cluster = Cluster(
        nodes,
        session.all_pods(),
        session.pdbs(),
        session.daemonsets(what="driver DaemonSets"),
        cp,
        session.nvidia_drivers() if crd_mode(cp) else (),
    )
    quarantine_failures = failures(found, budget_now, options.foreign_quarantine, pending, options.exclude)
    checked = gate(cluster, planned, record, options, quarantine_failures)
    disruption = predict(planned, cluster, target, source, options, session.ns)
    # checked when a run starts: while drivers restart in a wave, the count differs for a moment
    refusals = state_refusals(cluster.daemonsets, cluster.pods, nodes) if pending and not resumed else []
    refusal = eviction_limit_failure(disruption, options.max_evicted_workloads)
    if refusal:
        refusals.append(refusal)
    if refusals:
        checked["failures"].extend(refusals)
        checked["passed"] = False
    if not resumed:
        record["in_place"] = disruption["in_place"]
    status = {w["index"]: w.get("status", WAVE_PENDING) for w in record["waves"]}
    result = {
        "resumed": resumed,
        "phase": record.get("phase"),
        "target": target,
        "from": source,
        "mode": "nvidiadriver" if crd_mode(cp) else "clusterpolicy",
        "taint": {"key": session.taint_key, "effect": session.taint_effect},
        "skip_label": UPGRADE_SKIP_LABEL,
        "waves": [
            dict(
                w,
                status=status.get(w["index"], WAVE_PENDING),
                taint="%s=%s:%s" % (session.taint_key, w["name"], session.taint_effect),
            )
            for w in waves_plan
        ],
        "next_wave": next_wave(record),
        "unplanned": record.get("unplanned") or [],
        "excluded": record.get("excluded") or [],
        "foreign_quarantine": report(found, budget_now),
        "budget": budget_now,
        "nodes": len(planned),
        "gate": checked,
        "disruption": disruption,
        "record": "%s/%s" % (session.ns, session.cm_name),
        "tolerations": tolerations,
        "switches": switches(cp),
    }
    return result, record, nodes, cp
