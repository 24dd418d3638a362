# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Where a wait stands, as data and as lines for people: each node's driver upgrade (its upgrade state, its driver
and what it waits for), the counts of a wave, and whether anything can still move."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import (
    DRIVER_VERSION_LABEL,
    IN_PROGRESS_WAITS,
)

DONE, MOVING, NOT_STARTED, FAILED = "done", "in progress", "not started", "failed"

#: Node lines shown at most per progress report (the counts cover every node).
MAX_NODE_LINES = 10


def node_progress(node, target_driver):
    """``(status, mark, text)`` of one node's driver upgrade: ``status`` is DONE, MOVING, NOT_STARTED or FAILED,
    ``mark`` changes whenever its upgrade state or driver does, ``text`` says what it shows and waits for."""
    if node is None:
        return FAILED, "gone", "the node disappeared"
    labels = labels_of(node)
    state = labels.get(UPGRADE_STATE_LABEL) or ""
    version = labels.get(DRIVER_VERSION_LABEL) or "unknown"
    mark = "%s %s" % (state or "none", version)
    shown = "%s, driver %s" % (state or "no upgrade state", version)
    if state == "upgrade-failed":
        return FAILED, mark, "the operator's upgrade controller set %s=upgrade-failed" % UPGRADE_STATE_LABEL
    if labels.get(UPGRADE_SKIP_LABEL) == "true":
        return NOT_STARTED, mark, shown + ", still held by the skip label"
    if state in IN_PROGRESS_WAITS:
        return MOVING, mark, "%s, waiting for %s" % (shown, IN_PROGRESS_WAITS[state])
    if state in ("upgrade-done", "") and (not target_driver or version == target_driver):
        return DONE, mark, shown
    if state:
        return NOT_STARTED, mark, shown + ", waiting for the upgrade controller to start it"
    return NOT_STARTED, mark, shown + ", waiting for the operator's upgrade controller to give it an upgrade state"


def stalled(statuses, quiet_for, grace):
    """True when nothing can progress: no node failed or in progress, some not started, and no upgrade state or
    driver changed for ``grace`` seconds."""
    kinds = {v[0] for v in statuses.values()}
    return NOT_STARTED in kinds and not kinds & {MOVING, FAILED} and quiet_for >= grace


def report(title, elapsed, timeout, head, details, waiting=True):
    """A progress report: ``{"waiting", "lines"}``, the first line ``<title>: <head> (<elapsed> s of at most
    <timeout> s)``, then at most :data:`MAX_NODE_LINES` detail lines."""
    lines = ["%s: %s (%d s of at most %d s)" % (title, head, elapsed, timeout)]
    lines.extend(details[:MAX_NODE_LINES])
    if len(details) > MAX_NODE_LINES:
        lines.append("... and %d more" % (len(details) - MAX_NODE_LINES))
    return {"waiting": waiting, "lines": lines}


def upgrade_report(title, statuses, elapsed, timeout, waiting=True):
    """The report of a driver upgrade over ``statuses`` (``{node: node_progress(...)}``), with the nodes of each
    status and one line per node that is not done."""
    names = {s: sorted(n for n, v in statuses.items() if v[0] == s) for s in (DONE, MOVING, NOT_STARTED, FAILED)}
    head = "%d of %d nodes done, %d in progress, %d not started, %d failed" % (
        len(names[DONE]),
        len(statuses),
        len(names[MOVING]),
        len(names[NOT_STARTED]),
        len(names[FAILED]),
    )
    details = ["%s: %s" % (n, statuses[n][2]) for n in sorted(statuses) if statuses[n][0] != DONE]
    out = report(title, elapsed, timeout, head, details, waiting)
    out.update(done=names[DONE], in_progress=names[MOVING], not_started=names[NOT_STARTED], failed=names[FAILED])
    return out
