# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Gates before any write: the GPU Operator life-cycle policy (reference §8: upgrades within a major release
``YY.MM`` or to the next one only, no downgrade) and CRDs that would lose fields; ``force`` lifts both."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import REPO_ALIAS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError

#: GPU Operator major releases (``YY.MM``) per the release tags (reference §1); versions seen in a chart
#: repository index are added to these.
KNOWN_MAJORS = ((24, 3), (24, 6), (24, 9), (25, 3), (25, 10), (26, 3), (26, 7))


def operator_version(text):
    """``"v26.3.3"`` -> ``(26, 3, 3)``; raise ReleaseError for anything else."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(text or ""))
    if not match:
        raise ReleaseError("chart version %r is not a GPU Operator version (YY.MM.PP, for example v26.7.0)" % (text,))
    return tuple(int(x) for x in match.groups())


def version_gate(current, target, majors=(), force=False):
    """None when upgrading ``current`` -> ``target`` is allowed, else the reason (a sentence).

    Life-cycle policy: "Upgrades are only supported within a major release or to the next major release"; a
    major release is ``YY.MM``. Downgrades are never supported. ``force`` lifts both refusals.
    """
    cur, tgt = operator_version(current), operator_version(target)
    if tgt == cur or force:
        return None
    if tgt < cur:
        return (
            "downgrade from %s to %s is not supported by the GPU Operator (CRDs and operands are not rolled back); "
            "set force: true to do it anyway" % (current, target)
        )
    known = sorted(set(KNOWN_MAJORS) | set(majors) | {cur[:2], tgt[:2]})
    later = [m for m in known if m > cur[:2]]
    allowed = {cur[:2]} | ({later[0]} if later else set())
    if tgt[:2] in allowed:
        return None
    skipped = [m for m in known if cur[:2] < m < tgt[:2]]
    return (
        "upgrade from %s to %s skips the major release(s) %s; the GPU Operator life-cycle policy supports upgrades "
        "only within a major release or to the next one. Upgrade to v%d.%d.x first (or set force: true)"
        % (current, target, ", ".join("%d.%d" % m for m in skipped), later[0][0], later[0][1])
    )


def lost_fields_summary(lost):
    """``(count, text)`` of ``{CRD name: [fields]}``: the total and, per CRD, its count and first fields."""
    parts = [
        "%s: %d (%s%s)" % (name, len(fields), ", ".join(fields[:3]), ", ..." if len(fields) > 3 else "")
        for name, fields in sorted(lost.items())
    ]
    return sum(len(f) for f in lost.values()), "; ".join(parts)


def crd_gate(lost, version, force=False):
    """None when applying chart ``version``'s CRDs drops no field of the live CRDs (``lost``: ``{CRD: [fields]}``) or
    ``force`` is set, else the reason (a sentence)."""
    if not lost or force:
        return None
    count, text = lost_fields_summary(lost)
    return (
        "the CRDs in the cluster carry fields that chart %s's CRDs lack (they come from a newer chart): applying them "
        "would drop %d field(s) from the stored schemas (%s), and the API server would prune those fields from every "
        "stored object. Set force: true to apply them anyway, or choose a chart version whose CRDs carry these "
        "fields" % (version, count, text)
    )


def repo_majors(helm, chart):
    """``YY.MM`` majors the chart's repository publishes (empty for OCI and local charts)."""
    if chart.kind != "repo":
        return set()
    rc, out, _err = helm.run(
        ["search", "repo", "%s/%s" % (REPO_ALIAS, chart.name), "--versions", "-o", "json"],
        cluster=False,
        check=False,
    )
    if rc != 0:
        return set()
    majors = set()
    for entry in json.loads(out or "[]"):
        try:
            majors.add(operator_version(entry.get("version"))[:2])
        except ReleaseError:
            continue
    return majors
