# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The wave steps: ``run_wave`` upgrades one wave through the operator's upgrade controller and proves it on the
cluster side; ``finish_wave`` records the caller's own proof; ``abort`` stops the upgrade at the first failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.drain import (
    handle_workloads,
    roll_operands,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import wait_upgraded
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import (
    CanaryAbort,
    failures_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DRIVER_VERSION_LABEL,
    FAILED_ANNOTATION,
    IN_PROGRESS_STATES,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.proof import (
    dcgm_xid_by_node,
    prove_node,
    xid_events,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    WAVE_FAILED,
    WAVE_PROVEN,
    WAVE_UPGRADED,
    WAVE_UPGRADING,
    next_wave,
    wave_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    cluster_policy_path,
    utc_now,
)


def _start(session, record, wave):
    """Mark the wave upgrading (and the run in progress) in the record."""
    wave["status"] = WAVE_UPGRADING
    wave["started"] = wave.get("started") or utc_now(session.clock)
    wave["reason"] = None
    record["phase"] = "in-progress"
    record["reason"] = None
    session.save_record(record)


def _fail(session, record, wave, failed, what):
    """Abort the wave for ``failed`` ({node: why}) and raise the CanaryAbort that says so."""
    msg = "%s %s: %s" % (wave["name"], what, failures_text(failed))
    abort(session, record, wave["index"], failed, msg)
    raise CanaryAbort(msg, wave=wave["index"], failed=failed)


def run_wave(session, record, index, opts):
    """Upgrade one wave through the operator's upgrade controller and prove it on the cluster side.

    ``opts``: driver_version, policy (eviction), wait_selector, eviction_timeout, wave_timeout, proof_timeout,
    dcgm_url, fetch (callable url -> text, for DCGM). Raises :class:`CanaryAbort` after aborting.
    """
    wave = wave_of(record, index)
    if wave.get("status") == WAVE_PROVEN:
        return {"wave": wave, "nodes": {}, "skipped": True}
    _start(session, record, wave)
    by_name = session.nodes_by_name()
    members = [n for n in wave["nodes"] if n in by_name]
    for n in members:
        session.taint(by_name[n], wave["name"])
    # a node this run left failed is retried (the operator's documented retry: relabel upgrade-required)
    for n in members:
        node = by_name[n]
        if FAILED_ANNOTATION in annotations_of(node):
            session.annotate_node(node, {FAILED_ANNOTATION: None}, "clear the earlier failure (retry)")
            if labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-failed":
                session.label_node(node, {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry the driver upgrade")
    try:
        evicted = handle_workloads(
            session,
            wave,
            opts.get("policy", "evict"),
            opts.get("wait_selector") or "",
            opts.get("eviction_timeout", 600),
        )
    except CanaryAbort as exc:
        abort(session, record, index, dict.fromkeys(members, exc.msg), exc.msg)
        raise
    for n in members:
        session.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "release the driver upgrade (remove skip label)")
    if session.check_mode:
        return {"wave": wave, "nodes": {}, "evicted": evicted, "upgrade": {}, "skipped": False}
    target = opts.get("driver_version") or (record.get("target") or {}).get("driver_version")
    failed, results = wait_upgraded(session, members, target, opts.get("wave_timeout", 1800))
    if failed:
        _fail(session, record, wave, failed, "failed")
    rolled = roll_operands(session, members)
    failed, proof = prove(session, members, target, wave["started"], opts)
    if failed:
        _fail(session, record, wave, failed, "failed its proof")
    wave["status"] = WAVE_UPGRADED
    session.save_record(record)
    return {
        "wave": wave,
        "nodes": proof,
        "evicted": evicted,
        "operands_renewed": rolled,
        "upgrade": results,
        "skipped": False,
    }


def prove(session, members, target, since, opts):
    """Cluster-side proof of the members (labels, allocatable, validator and operands, no new Xid, DCGM); returns
    ``(failed {node: why}, views {node: summary})``. Waits up to ``proof_timeout`` for operands to settle; a new
    Xid fails at once."""
    deadline = session.clock() + opts.get("proof_timeout", 180)
    views = {}

    def check():
        nodes = session.nodes_by_name()
        by_node, _unscheduled = operands_by_node(session.operator_pods())
        events = session.node_events()
        dcgm = dcgm_xid_by_node(opts["fetch"](opts["dcgm_url"])) if opts.get("dcgm_url") and opts.get("fetch") else {}
        failed = {}
        hard = False
        for n in members:
            if n not in nodes:
                failed[n] = "node disappeared"
                continue
            view = node_view(nodes[n], by_node.get(n))
            xids = xid_events(events, n, since)
            problems = prove_node(view, target, xids, dcgm.get(n))
            views[n] = {
                "driver_version": (view.get("labels") or {}).get(DRIVER_VERSION_LABEL),
                "upgrade_state": view.get("upgrade_state"),
                "allocatable": view.get("allocatable"),
                "capacity": view.get("capacity"),
                "problems": problems,
            }
            if problems:
                failed[n] = "; ".join(problems)
                hard = hard or bool(xids) or bool(dcgm.get(n))
        return (not failed) or hard, failed

    _done, failed = session.wait(deadline, check)
    return failed, views


def _finish_run(session, record, by_name):
    """After the last wave: the operands' update strategy back as it was, the skip labels this run set removed
    (but on unplanned nodes)."""
    record["phase"] = "done"
    if "operand_strategy" in record:
        cp = session.cluster_policy()
        have = (((cp or {}).get("spec") or {}).get("daemonsets") or {}).get("updateStrategy")
        if cp and have != record["operand_strategy"]:
            session.write(
                "ClusterPolicy %s: restore spec.daemonsets.updateStrategy=%s"
                % (name_of(cp), record["operand_strategy"] or "(default)"),
                "PATCH",
                cluster_policy_path(cp),
                {"spec": {"daemonsets": {"updateStrategy": record["operand_strategy"]}}},
            )
    still = []
    for n in record.get("skip_labelled") or []:
        if n in by_name and n not in (record.get("unplanned") or []):
            session.label_node(by_name[n], {UPGRADE_SKIP_LABEL: None}, "upgrade finished (remove skip label)")
        else:
            still.append(n)
    record["skip_labelled"] = still


def finish_wave(session, record, index, passed, reason=None, failed_nodes=None):
    """After the role's own proof (smoke pods, the user's test workloads): untaint and mark proven, or abort."""
    wave = wave_of(record, index)
    if not passed:
        nodes = failed_nodes or wave["nodes"]
        msg = "%s failed: %s" % (wave["name"], reason or "the role's proof failed")
        abort(session, record, index, dict.fromkeys(nodes, reason or "proof failed"), msg)
        raise CanaryAbort(msg, wave=index, failed=dict.fromkeys(nodes, reason))
    by_name = session.nodes_by_name()
    for n in wave["nodes"]:
        if n in by_name:
            session.untaint(by_name[n])
    wave["status"] = WAVE_PROVEN
    wave["finished"] = utc_now(session.clock)
    if next_wave(record) is None:
        _finish_run(session, record, by_name)
    session.save_record(record)
    return wave


def abort(session, record, index, failed, reason):
    """Stop: failed nodes keep the canary taint and get an annotation saying why; every wave node that the
    controller has not started gets its skip label back; the record says aborted."""
    wave = wave_of(record, index)
    by_name = session.nodes_by_name()
    stamp = utc_now(session.clock)
    for n in wave["nodes"]:
        node = by_name.get(n)
        if node is None:
            continue
        session.taint(node, wave["name"])
        if n in failed:
            text = "%s %s: %s" % (stamp, wave["name"], failed[n])
            session.annotate_node(node, {FAILED_ANNOTATION: text[:1000]}, "record why the canary upgrade failed")
        state = labels_of(node).get(UPGRADE_STATE_LABEL) or ""
        not_started = state == "upgrade-required" or (
            n not in failed and state not in IN_PROGRESS_STATES and state != "upgrade-done"
        )
        if not_started:
            session.label_node(node, {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade after the abort")
    wave["status"] = WAVE_FAILED
    wave["reason"] = reason[:2000]
    wave["finished"] = stamp
    record["phase"] = "aborted"
    record["reason"] = reason[:2000]
    session.save_record(record)
