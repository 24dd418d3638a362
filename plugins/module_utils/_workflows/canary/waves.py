# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Which nodes move, and in which waves: the canary pool first, then the other GPU nodes in cumulative waves."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.text import natural_key
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    is_gpu_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import PlanError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import POOL_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    parse_selector,
    selector_matches,
)

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_wave(value, index):
    """``(kind, amount)`` of one wave entry: ``("count", n)`` or ``("percent", p)``."""
    if isinstance(value, bool):
        raise PlanError("waves[%d] is %r; use a node count such as 1 or a percentage such as '25%%'" % (index, value))
    if isinstance(value, int):
        if value < 1:
            raise PlanError("waves[%d] is %d; a node count must be at least 1" % (index, value))
        return ("count", value)
    text = str(value).strip()
    if text.isdigit():
        return parse_wave(int(text), index)
    match = _PERCENT.match(text)
    if not match:
        raise PlanError(
            "waves[%d] is %r; use a node count such as 1 or a percentage such as '25%%' (cumulative)" % (index, value)
        )
    pct = float(match.group(1))
    if pct <= 0 or pct > 100:
        raise PlanError("waves[%d] is %r; a percentage must be above 0%% and at most 100%%" % (index, value))
    return ("percent", pct)


def wave_targets(waves, total):
    """Cumulative node counts reached after each wave entry (counts and percentages of ``total``).

    Counts are cumulative like percentages: ``[1, "10%", "25%", "100%"]`` over 40 nodes reaches 1, 4, 10, 40.
    A percentage rounds up. Targets must not go down; an entry that adds no node is dropped.
    """
    out = []
    last = 0
    for index, value in enumerate(waves):
        kind, amount = parse_wave(value, index)
        target = amount if kind == "count" else int(math.ceil(total * amount / 100.0 - 1e-9))
        target = min(target, total)
        if target < last:
            raise PlanError(
                "waves[%d] (%r) reaches %d node(s), fewer than the %d the waves before it reach; waves are "
                "cumulative, so list them in increasing order" % (index, value, target, last)
            )
        if target > last:
            out.append(target)
            last = target
    return out


def plan_waves(canary, rest, waves):
    """The ordered waves: ``[{"index", "name", "nodes"}]``, the canary first, then ``rest`` per ``waves``.

    ``rest`` is taken in the given order (the caller sorts it, e.g. by pool then name, for a stable plan).
    """
    plan = []
    if canary:
        plan.append({"index": 0, "name": "canary", "nodes": list(canary)})
    start = 0
    for target in wave_targets(waves, len(rest)):
        plan.append({"index": len(plan), "name": "wave-%d" % len(plan), "nodes": list(rest[start:target])})
        start = target
    return plan, list(rest[start:])


def interleave_pools(names, pool_of):
    """``names`` reordered round-robin over pools (each pool in natural name order) so every wave touches every
    pool."""
    pools = {}
    for n in sorted(names, key=natural_key):
        pools.setdefault(pool_of(n), []).append(n)
    order = sorted(pools, key=lambda p: (p is None, str(p)))
    out = []
    while any(pools[p] for p in order):
        for p in order:
            if pools[p]:
                out.append(pools[p].pop(0))
    return out


def _names_text(names):
    return ", ".join(names) if names else "none"


def select(nodes, canary_nodes, canary_selector, exclude=(), quarantined=()):
    """``(canary, rest, excluded)`` node names among the GPU nodes: the canary pool (``canary_nodes``, else the
    nodes ``canary_selector`` matches), the other movable nodes interleaved over pools, and the nodes left out
    (``exclude`` and the nodes that carry the skip label). The ``quarantined`` nodes (someone else's) are in none."""
    gpu = {name_of(n): n for n in nodes if is_gpu_node(n)}
    excluded = sorted(
        n
        for n, node in gpu.items()
        if n not in quarantined and (n in set(exclude) or labels_of(node).get(UPGRADE_SKIP_LABEL) == "true")
    )
    movable = [n for n in gpu if n not in excluded and n not in quarantined]
    if canary_nodes:
        unknown = sorted(set(canary_nodes) - set(gpu))
        if unknown:
            raise PlanError(
                "canary node(s) %s are not GPU nodes of this cluster; check the canary group's k8s node names"
                % ", ".join(unknown)
            )
        canary = [n for n in sorted(set(canary_nodes), key=natural_key) if n in movable]
    else:
        terms = parse_selector(canary_selector)
        canary = sorted((n for n in movable if selector_matches(labels_of(gpu[n]), terms)), key=natural_key)
    if not canary:
        raise PlanError(
            "the canary pool is empty (canary_nodes: %s; canary_selector: %s; excluded: %s; foreign-quarantined: %s); "
            "name at least one GPU node that is neither skipped nor quarantined"
            % (
                _names_text(canary_nodes),
                canary_selector or "none",
                _names_text(excluded),
                _names_text(sorted(quarantined)),
            )
        )
    pools = {n: labels_of(gpu[n]).get(POOL_LABEL) for n in movable}
    rest = interleave_pools([n for n in movable if n not in canary], pools.get)
    return canary, rest, excluded
