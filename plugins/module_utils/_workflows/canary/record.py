# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The progress record: the plan and each wave's status, stored as JSON in a ConfigMap so a rerun resumes it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError

RECORD_VERSION = 1
RECORD_KEY = "record"

#: Wave status values, in the order a wave moves through them.
WAVE_PENDING, WAVE_UPGRADING, WAVE_UPGRADED, WAVE_PROVEN, WAVE_FAILED = (
    "pending",
    "upgrading",
    "upgraded",
    "proven",
    "failed",
)


#: Record phases: an upgrade in progress, stopped by a failure, finished; a rollback under way, finished, failed.
PHASE_IN_PROGRESS, PHASE_ABORTED, PHASE_DONE = "in-progress", "aborted", "done"
PHASE_ROLLING_BACK, PHASE_ROLLED_BACK, PHASE_ROLLBACK_FAILED = "rolling-back", "rolled-back", "rollback-failed"
#: Phases in which the cluster still carries the preparation (a later run resumes or rolls back).
UNFINISHED = (PHASE_IN_PROGRESS, PHASE_ABORTED, PHASE_ROLLING_BACK, PHASE_ROLLBACK_FAILED)


def new_record(target, source, taint, plan, left_out, now):
    """A fresh record (phase ``in-progress``, every wave pending) for the planned waves; ``left_out``: the nodes
    left out of them, ``unplanned``, ``excluded`` and ``quarantined`` (the GPU nodes someone else took out of
    service; prepare holds them with the skip label)."""
    return {
        "version": RECORD_VERSION,
        "phase": PHASE_IN_PROGRESS,
        "target": target,
        "from": source,
        "taint": taint,
        "waves": [dict(w, status=WAVE_PENDING, reason=None, started=None, finished=None) for w in plan],
        "unplanned": list(left_out.get("unplanned", ())),
        "excluded": list(left_out.get("excluded", ())),
        "quarantined": sorted(left_out.get("quarantined", ())),
        "skip_labelled": [],
        "started": now,
        "updated": now,
        "reason": None,
    }


def decode_record(configmap):
    """The record stored in a ConfigMap dict, or None (no ConfigMap, no or unreadable record)."""
    if not configmap:
        return None
    raw = (configmap.get("data") or {}).get(RECORD_KEY)
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    return record


def encode_record(record):
    """The record as the compact, key-sorted JSON stored in the ConfigMap."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def same_target(record, target):
    """True if ``record`` is an upgrade to ``target``."""
    return bool(record) and (record.get("target") or {}) == target


def target_text(target):
    """An upgrade target (or source) as words: ``driver 610.57.04 and chart v26.7.0``."""
    parts = [
        "%s %s" % (what, (target or {}).get(key))
        for what, key in (("driver", "driver_version"), ("chart", "chart_version"))
        if (target or {}).get(key)
    ]
    return " and ".join(parts) or "no version"


def source_text(source):
    """Where an upgrade starts, as words: the drivers the GPU nodes run (``driver 550.127.05 on 20 node(s)``), the
    ClusterPolicy's driver where no node runs it, and the chart."""
    source = source or {}
    running = source.get("running")
    if running is None:  # a record written before the running drivers were kept
        return target_text(source)
    parts = (
        ["driver %s" % ", ".join("%s on %d node(s)" % (v, n) for v, n in sorted(running.items(), key=lambda i: -i[1]))]
        if running
        else ["no driver version reported by the GPU nodes"]
    )
    named = source.get("driver_version")
    if named and named not in running:
        parts.append("the ClusterPolicy names driver %s" % named)
    if source.get("chart_version"):
        parts.append("chart %s" % source["chart_version"])
    return "; ".join(parts)


def next_wave(record):
    """Index of the first wave that is not proven, or None when all are."""
    for wave in record.get("waves") or []:
        if wave.get("status") != WAVE_PROVEN:
            return wave["index"]
    return None


def wave_of(record, index):
    """The wave ``index`` of the record; PlanError when the plan has no such wave."""
    for wave in record["waves"]:
        if wave["index"] == index:
            return wave
    raise PlanError(
        "wave %s is not in the plan (waves 0..%d); run the plan step first" % (index, len(record["waves"]) - 1)
    )


def wave_nodes(record, skip_proven=False):
    """The nodes of the record's waves in wave order (with ``skip_proven``, only those of waves not proven)."""
    return [n for w in record["waves"] if not (skip_proven and w.get("status") == WAVE_PROVEN) for n in w["nodes"]]


def held_out(record):
    """The nodes the record keeps on their old driver with the skip label: the unplanned ones and those someone
    else quarantined."""
    return list(record.get("unplanned") or []) + list(record.get("quarantined") or [])
