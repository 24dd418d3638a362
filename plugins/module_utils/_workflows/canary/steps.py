# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The module's steps over its parameters: ``status`` and ``rollback`` read the record alone (no target needed);
the others plan first (and ``prepare`` stops when the gate fails). A failure after the preparation says what it left
on the cluster and what to run next."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import (
    CanaryAbort,
    PlanError,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.lease import (
    RecordLease,
    holder_identity,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.managed import switches
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    same_target,
    target_text,
)

#: Steps that need a target (driver_version, chart_version or both).
TARGETED = ("plan", "prepare", "wave", "finish_wave")


def _prepare(canary, p, plan, record, nodes, cp):
    if not plan["gate"]["passed"]:
        raise CanaryAbort("the gate failed: " + "; ".join(plan["gate"]["failures"]))
    policy = dict(p["upgrade_policy"] or {})
    policy.setdefault("autoUpgrade", True)
    canary.prepare(record, nodes, cp, policy, hold_operands=p["hold_operands"])
    return {}


def _wave(canary, p, plan, record, nodes, cp):
    opts = {
        "driver_version": p["driver_version"],
        "policy": p["eviction"],
        "wait_selector": p["wait_for_completion_selector"],
        "eviction_timeout": p["eviction_timeout"],
        "wave_timeout": p["wave_timeout"],
        "stall_grace": p["stall_grace"],
        "proof_timeout": p["proof_timeout"],
        "dcgm_url": p["dcgm_url"],
        "fetch": p.get("_fetch"),
    }
    out = canary.run_wave(record, p["wave"], opts)
    return {"wave": out, "progress": out.pop("progress", None) or {"waiting": False, "lines": []}}


def _finish_wave(canary, p, plan, record, nodes, cp):
    wave = canary.finish_wave(record, p["wave"], p["passed"], p["reason"], p["failed_nodes"] or None)
    return {"wave": {"wave": wave}}


PLANNED = {"plan": lambda *_args: {}, "prepare": _prepare, "wave": _wave, "finish_wave": _finish_wave}


def _rollback(canary, p):
    record = canary.read_record()
    target = {"driver_version": p["driver_version"] or None, "chart_version": p["chart_version"] or None}
    if record is None:
        raise PlanError(
            "no canary upgrade is recorded in %s/%s, so there is nothing to roll back" % (canary.ns, canary.cm_name)
        )
    if any(target.values()) and not same_target(record, target):
        raise PlanError(
            "the recorded canary upgrade goes to %s, not to %s; roll it back without a target (the record has it)"
            % (target_text(record.get("target")), target_text(target))
        )
    failed, progress = canary.rollback(record, p["wave_timeout"], p["stall_grace"])
    if failed:
        raise CanaryAbort(record["reason"], failed=failed)
    return {"record": record, "progress": progress, "switches": switches(canary.cluster_policy())}


def _planned(canary, p, check_mode):
    plan, record, nodes, cp = canary.plan(canary.options)
    if p["step"] in ("wave", "finish_wave") and not plan["resumed"] and not check_mode:
        raise PlanError("no progress record for this target in %s; run step=prepare first" % plan["record"])
    out = {"plan": plan}
    out.update(PLANNED[p["step"]](canary, p, plan, record, nodes, cp))
    out["record"] = record
    return out


def _left(canary, exc):
    """``exc`` with what the run left on the cluster and what to run next in its message (unchanged when the status
    cannot be read either)."""
    try:
        status = canary.status()
    except GpuOpsError:
        return exc
    if status["unfinished"] or status["leftovers"]:
        left = "; ".join(status["leftovers"]) or "nothing"
        exc.msg = "%s. Left on the cluster: %s. %s" % (exc.msg.rstrip("."), left, status["next"])
    return exc


#: The steps that write (``plan`` and ``status`` only read).
WRITING_STEPS = ("prepare", "wave", "finish_wave", "rollback")


def check_step(p):
    """Raise :class:`PlanError` when ``p["step"]`` lacks an option it needs (before any request)."""
    step = p["step"]
    if step in ("wave", "finish_wave") and p["wave"] is None:
        raise PlanError("step=%s needs wave (the index of a wave in plan.waves)" % step)
    if step in TARGETED and not (p["driver_version"] or p["chart_version"]):
        raise PlanError("step=%s needs a target: driver_version, chart_version or both" % step)


def run_step(canary, p, check_mode=False):
    """Run ``p["step"]`` (its options checked by :func:`check_step`); returns its result keys (``changes`` and
    ``api_requests`` are the caller's). A step that writes holds the record's Lease while it runs (:mod:`.lease`)."""
    step = p["step"]
    if step == "status":
        return {"status": canary.status()}
    if step in WRITING_STEPS and not check_mode:
        canary.lease = RecordLease(canary.client, canary.ns, canary.cm_name, holder_identity(step), clock=canary.clock)
        canary.lease.acquire()
    try:
        return _rollback(canary, p) if step == "rollback" else _planned(canary, p, check_mode)
    except CanaryAbort as exc:
        raise _left(canary, exc) from None
    finally:
        if canary.lease is not None:
            canary.lease.release()
