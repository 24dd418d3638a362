# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The rollback step: the driver back at the record's source version, every planned node released to it, and the
preparation taken back. It needs no target (the record has it), and a second run finishes what the first left."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from functools import partial

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import (
    UpgradeWait,
    crd_mode,
    set_driver_version,
    wait_upgraded,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import (
    PlanError,
    failures_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.managed import driver_unmanaged
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    FAILED_ANNOTATION,
    INITIAL_UNSCHEDULABLE_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.prepare import undo
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    PHASE_ROLLBACK_FAILED,
    PHASE_ROLLED_BACK,
    PHASE_ROLLING_BACK,
    wave_nodes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import Pause, node_path


def _release(session, node):
    """Clear the node's failure: the annotation, and an upgrade-failed state relabelled upgrade-required."""
    n = name_of(node)
    failed = labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-failed"
    metadata = [("annotations", {FAILED_ANNOTATION: None}, "clear the failure (rollback)")]
    if failed:
        metadata.append(("labels", {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry towards the old driver"))
    session.update_node(node, metadata)
    if not failed:
        return
    # the controller cordoned it for the failed upgrade; with the old driver still in place it may not walk the
    # states again, so restore the cordon state it recorded before its first cordon
    initial = annotations_of(node).get(INITIAL_UNSCHEDULABLE_ANNOTATION)
    if initial == "false" and (node.get("spec") or {}).get("unschedulable"):
        session.write(
            "node %s: uncordon (schedulable before the failed upgrade)" % n,
            "PATCH",
            node_path(n),
            {"spec": {"unschedulable": None}},
        )


def _unheld(node, released):
    """The labels that let a held node go: no skip label, and a node the run never released that the controller
    put in upgrade-required while it was held (the preparation's toleration changed the driver's pod template)
    back in upgrade-done - its driver never moved, and from upgrade-done NVIDIA's controller sends a node whose
    driver pod is out of date back to upgrade-required, where otherwise it would cordon the node and delete its GPU
    pods for a driver pod that is in date again."""
    labels = {UPGRADE_SKIP_LABEL: None}
    if name_of(node) not in released and labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-required":
        labels[UPGRADE_STATE_LABEL] = "upgrade-done"
    return labels


def rollback(session, record, timeout, grace=None):
    """Point the driver back at the record's source version (each NVIDIADriver at its own) and let every node that
    moved come back: failure annotations and canary taints cleared, upgrade-failed nodes relabelled
    upgrade-required, the preparation taken back (while the skip labels still hold the nodes), the skip labels this
    run set removed; then wait up to ``timeout`` seconds for every planned node whose driver the operator manages to
    run the source version.

    Returns ``(failed {node: why}, progress)``; ``progress["waiting"]`` when this call's share of waiting ended
    first (call it again to go on). The record says rolled-back, or rollback-failed with the reason."""
    cp = session.cluster_policy()
    if cp is None:
        raise PlanError("no ClusterPolicy in the cluster, so there is no driver version to roll back")
    session.timers(record)
    source = (record.get("from") or {}).get("driver_version")
    moves_driver = bool((record.get("target") or {}).get("driver_version"))
    if moves_driver and not source:
        raise PlanError("the progress record has no source driver version to roll back to")
    if moves_driver:
        set_driver_version(session, cp, source, {}, (record.get("prepared") or {}).get("nvidia_drivers"))
    nodes = session.nodes_by_name()
    planned = [n for n in wave_nodes(record) if n in nodes]
    session.each([nodes[n] for n in planned], partial(_release, session))
    session.each([nodes[n] for n in planned], session.untaint)
    # the preparation goes back with the version, while the skip labels still hold the nodes: NVIDIA's controller
    # takes each change of the driver's pod template for an upgrade, so the toleration taken back after the wait
    # would restart every driver a second time
    undo(session, record, session.cluster_policy())
    released = {n for w in record.get("waves") or [] if w.get("released") for n in w.get("nodes") or []}
    session.each(
        [nodes[n] for n in record.get("skip_labelled") or [] if n in nodes],
        lambda node: session.label_node(node, _unheld(node, released), "rollback (remove skip label)"),
    )
    record["skip_labelled"] = []
    record["phase"] = PHASE_ROLLING_BACK
    session.save_record(record)
    failed, progress = {}, {"waiting": False, "lines": ["rollback: no driver to wait for (the upgrade moved none)"]}
    if session.check_mode:
        progress["lines"] = ["rollback: check mode, nothing changed or waited for"]
    elif moves_driver:
        drivers = session.nvidia_drivers() if crd_mode(cp) else []
        moved = [n for n in planned if driver_unmanaged(nodes[n], cp, drivers) is None]
        timer = session.timer(record, "rollback")
        try:
            failed, progress = wait_upgraded(session, moved, source, timer, UpgradeWait("rollback", timeout, grace))
        except Pause as pause:
            session.save_record(record)
            return {}, pause.progress
    record["phase"] = PHASE_ROLLBACK_FAILED if failed else PHASE_ROLLED_BACK
    record["reason"] = "rollback did not complete: %s" % failures_text(failed) if failed else None
    record.pop("waits", None)
    session.save_record(record)
    return failed, progress
