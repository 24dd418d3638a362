# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The wave steps: ``run_wave`` upgrades one wave through the operator's upgrade controller and proves it on the
cluster side, returning where it stands when its share of waiting is over (the caller calls it again); ``finish_wave``
records the caller's own proof; ``abort`` stops the upgrade at the first failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    node_view,
    operands_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.drain import (
    handle_workloads,
    operand_versions,
    roll_operands,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import (
    UpgradeWait,
    wait_upgraded,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import (
    CanaryAbort,
    failures_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DRIVER_VERSION_LABEL,
    FAILED_ANNOTATION,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.prepare import undo
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.progress import (
    NOT_STARTED,
    node_progress,
    report,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.proof import (
    dcgm_xid_by_node,
    prove_node,
    xid_events_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    PHASE_ABORTED,
    PHASE_DONE,
    PHASE_IN_PROGRESS,
    WAVE_FAILED,
    WAVE_PROVEN,
    WAVE_UPGRADED,
    WAVE_UPGRADING,
    held_out,
    next_wave,
    wave_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    Pause,
    about,
    utc_now,
)

#: What the removal of a node's skip label says in the changes.
RELEASE = "release the driver upgrade (remove skip label)"


def _start(session, record, wave):
    """Mark the wave upgrading (and the run in progress) in the record."""
    wave["status"] = WAVE_UPGRADING
    wave["started"] = wave.get("started") or utc_now(session.clock)
    wave["reason"] = None
    record["phase"] = PHASE_IN_PROGRESS
    record["reason"] = None
    session.save_record(record)


def _fail(session, record, wave, failed, what):
    """Abort the wave for ``failed`` ({node: why}) and raise the CanaryAbort that says so."""
    msg = "%s %s: %s" % (wave["name"], what, failures_text(failed))
    abort(session, record, wave["index"], failed, msg)
    raise CanaryAbort(msg, wave=wave["index"], failed=failed)


def _take(session, wave, members, by_name, released):
    """Taint the wave's nodes, releasing the ``released`` ones in the same write; a node this run left failed is
    retried (the operator's documented retry: relabel upgrade-required)."""

    def take(node):
        metadata = []
        if FAILED_ANNOTATION in annotations_of(node):
            metadata.append(("annotations", {FAILED_ANNOTATION: None}, "clear the earlier failure (retry)"))
            if labels_of(node).get(UPGRADE_STATE_LABEL) == "upgrade-failed":
                metadata.append(("labels", {UPGRADE_STATE_LABEL: "upgrade-required"}, "retry the driver upgrade"))
        if name_of(node) in released:
            metadata.append(("labels", {UPGRADE_SKIP_LABEL: None}, RELEASE))
        session.taint(node, wave["name"], metadata)

    session.each([by_name[n] for n in members], take)


def _moving(record, wave, members, opts):
    """The members whose GPU workloads are moved (or waited for) between their taint and their release: none when
    the wave was released before (a resumed run) or the policy leaves them and waits for none, and never a node
    whose driver restarts in place."""
    if wave.get("released") or (opts.get("policy", "evict") == "none" and not opts.get("wait_selector")):
        return []
    in_place = set(record.get("in_place") or ())
    return [n for n in members if n not in in_place]


def _move_workloads(session, record, wave, members, moving, opts):
    """Move the GPU workloads off the ``moving`` nodes (see :func:`_moving`), aborting the wave when they do not
    go; returns the evicted pods."""
    try:
        evicted = handle_workloads(session, wave, moving, opts, session.timer(wave, "workloads"))
    except CanaryAbort as exc:
        abort(session, record, wave["index"], dict.fromkeys(members, exc.msg), exc.msg)
        raise
    return evicted


def _release_labels(session, record, wave, moving, by_name):
    """Remove the skip labels of the nodes whose workloads were moved, and record the wave's release once."""
    session.each(
        [by_name[n] for n in moving], lambda node: session.label_node(node, {UPGRADE_SKIP_LABEL: None}, RELEASE)
    )
    if not session.check_mode and not wave.get("released"):
        wave["released"] = utc_now(session.clock)
        session.save_record(record)


def run_wave(session, record, index, opts):
    """Upgrade one wave through the operator's upgrade controller and prove it on the cluster side.

    ``opts``: driver_version, policy (eviction), wait_selector, eviction_timeout, wave_timeout, stall_grace,
    proof_timeout, dcgm_url, fetch (callable url -> text, for DCGM). Returns ``progress`` (where the last wait
    stands; ``waiting`` when this call's share of waiting ended first: call it again). Raises
    :class:`CanaryAbort` after aborting.
    """
    wave = wave_of(record, index)
    if wave.get("status") == WAVE_PROVEN:
        return {"wave": wave, "nodes": {}, "skipped": True}
    session.timers(wave)
    _start(session, record, wave)
    by_name = session.nodes_by_name()
    members = [n for n in wave["nodes"] if n in by_name]
    moving = _moving(record, wave, members, opts)
    _take(session, wave, members, by_name, set(members) - set(moving))
    result = {"wave": wave, "nodes": {}, "evicted": [], "operands_renewed": [], "skipped": False}
    try:
        if moving:
            result["evicted"] = _move_workloads(session, record, wave, members, moving, opts)
        _release_labels(session, record, wave, moving, by_name)
        if session.check_mode:
            return result
        target = opts.get("driver_version") or (record.get("target") or {}).get("driver_version")
        timer = session.timer(wave, "upgrade")
        wait = UpgradeWait(wave["name"], opts.get("wave_timeout", 1800), opts.get("stall_grace"))
        failed, progress = wait_upgraded(session, members, target, timer, wait)
        result["progress"] = progress
        if failed:
            _fail(session, record, wave, failed, "failed")
        result["operands_renewed"], failed, result["nodes"] = prove_wave(session, wave, members, target, opts)
        if failed:
            _fail(session, record, wave, failed, "failed its proof")
    except Pause as pause:
        session.save_record(record)
        return dict(result, progress=pause.progress)
    wave["status"] = WAVE_UPGRADED
    session.save_record(record)
    return result


def prove_wave(session, wave, members, target, opts):
    """After the upgrade: renew the members' held operands (``drain.roll_operands``), then :func:`prove` them, from
    the reads that decided the renewal when it renewed nothing; returns ``(renewed pods, failed, views)``."""
    reads = proof_reads(session)
    renewed = roll_operands(session, members, wave.setdefault("renewed", {}), reads["daemonsets"], reads["pods"])
    failed, views = prove(session, wave, members, target, opts, None if renewed else reads)
    return renewed, failed, views


def proof_reads(session):
    """What a proof reads, all at once: the nodes (by name), the operator's DaemonSets and pods, the nodes' Warning
    events."""
    return session.read_all(
        {
            "nodes": session.nodes_by_name,
            "daemonsets": session.daemonsets,
            "pods": session.operator_pods,
            "warnings": session.node_warnings,
        }
    )


def prove(session, wave, members, target, opts, settled=None):
    """Cluster-side proof of the members (labels, allocatable, validator and operands with their versions, no new
    Xid, DCGM); returns ``(failed {node: why}, views {node: summary})``. Waits up to ``proof_timeout`` for operands
    to settle; a new Xid fails at once. Each check reads for all members at once: one LIST each of the nodes, the
    operator's pods and DaemonSets and the nodes' Warning events (:func:`proof_reads`, made at once), and one DCGM
    scrape. ``settled``: such reads just made, when no operand pod was renewed since: a proof they decide reads
    nothing again."""
    timer = session.timer(wave, "proof")
    timeout = opts.get("proof_timeout", 180)
    views, failed = {}, {}

    def check(reads=None):
        reads = reads or proof_reads(session)
        nodes, pods = reads["nodes"], reads["pods"]
        by_node, _unscheduled = operands_by_node(pods)
        versions = operand_versions(reads["daemonsets"], pods, members, wave.get("renewed"))
        xids_of = xid_events_by_node(reads["warnings"], wave["started"])
        dcgm = dcgm_xid_by_node(opts["fetch"](opts["dcgm_url"])) if opts.get("dcgm_url") and opts.get("fetch") else {}
        failed.clear()
        hard = False
        for n in members:
            if n not in nodes:
                failed[n] = "node disappeared"
                continue
            view = node_view(nodes[n], by_node.get(n))
            xids = xids_of.get(n, [])
            problems = prove_node(view, target, xids, dcgm.get(n)) + versions.get(n, [])
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

    def progress():
        head = "%d of %d nodes proven" % (len(members) - len(failed), len(members))
        details = ["%s: %s" % item for item in sorted(failed.items())]
        return report(wave["name"] + " proof", session.clock() - timer["since"], timeout, head, details)

    if not (settled and check(settled)[0]):
        session.wait(timer["since"] + timeout, check, progress, about(members))
    return dict(failed), views


def _finish_run(session, record, by_name):
    """After the last wave: the preparation taken back but the canary tolerations (every operand pod carries them
    now; the status names them), the skip labels this run set removed (but on unplanned and quarantined nodes)."""
    record["phase"] = PHASE_DONE
    cp = session.cluster_policy()
    if cp:
        undo(session, record, cp, tolerations=False)
    labelled = record.get("skip_labelled") or []
    done = [n for n in labelled if n in by_name and n not in held_out(record)]
    session.each(
        [by_name[n] for n in done],
        lambda node: session.label_node(node, {UPGRADE_SKIP_LABEL: None}, "upgrade finished (remove skip label)"),
    )
    record["skip_labelled"] = [n for n in labelled if n not in done]


def finish_wave(session, record, index, passed, reason=None, failed_nodes=None):
    """After the role's own proof (smoke pods, the user's test workloads): untaint and mark proven, or abort."""
    wave = wave_of(record, index)
    if not passed:
        nodes = failed_nodes or wave["nodes"]
        msg = "%s failed: %s" % (wave["name"], reason or "the role's proof failed")
        abort(session, record, index, dict.fromkeys(nodes, reason or "proof failed"), msg)
        raise CanaryAbort(msg, wave=index, failed=dict.fromkeys(nodes, reason))
    by_name = session.nodes_by_name()
    session.each([by_name[n] for n in wave["nodes"] if n in by_name], session.untaint)
    wave["status"] = WAVE_PROVEN
    wave["finished"] = utc_now(session.clock)
    wave.pop("waits", None)
    if next_wave(record) is None:
        _finish_run(session, record, by_name)
    session.save_record(record)
    return wave


def abort(session, record, index, failed, reason):
    """Stop: the wave's nodes keep the canary taint, failed ones get an annotation saying why; every wave node that
    the controller has not started gets its skip label back (a retry releases the wave again); the record says
    aborted."""
    wave = wave_of(record, index)
    by_name = session.nodes_by_name()
    stamp = utc_now(session.clock)
    target = (record.get("target") or {}).get("driver_version")

    def hold(node):
        metadata = []
        if name_of(node) in failed:
            text = "%s %s: %s" % (stamp, wave["name"], failed[name_of(node)])
            metadata.append(("annotations", {FAILED_ANNOTATION: text[:1000]}, "record why the canary upgrade failed"))
        if node_progress(node, target)[0] == NOT_STARTED:
            metadata.append(("labels", {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade after the abort"))
        session.taint(node, wave["name"], metadata)

    session.each([by_name[n] for n in wave["nodes"] if n in by_name], hold)
    wave["status"] = WAVE_FAILED
    wave["reason"] = reason[:2000]
    wave["finished"] = stamp
    for key in ("released", "waits"):
        wave.pop(key, None)
    record["phase"] = PHASE_ABORTED
    record["reason"] = reason[:2000]
    session.save_record(record)
