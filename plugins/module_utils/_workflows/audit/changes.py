# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""A snapshot against a baseline: whether the baseline can be compared, and what changed since."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.compat.version import LooseVersion

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.dra import DRA_KINDS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.pools import DRIFT_FIELDS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.schema import (
    DRA_SINCE,
    SCHEMA_VERSION,
    SNAPSHOT_KIND,
    STATUS_OK,
)

#: Fields whose change against the baseline is reported, per row.
CHANGE_FIELDS = DRIFT_FIELDS + ("gpu_count", "gpu_health", "allocatable_gpus", "label_driver_version")
#: The DRA fields (a node's mode, the GPUs its DRA devices stand for), compared with baselines of DRA_SINCE or later.
DRA_CHANGE_FIELDS = ("mode", "dra_gpus_published")


class SnapshotError(GpuOpsError, ValueError):
    """The baseline is not a snapshot this code can compare against."""


def check_baseline(data, source):
    """``data`` when it is a snapshot of this schema's major version; SnapshotError naming ``source`` otherwise."""
    if not isinstance(data, dict) or data.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(
            "%s is not a gpu_audit snapshot (kind %r); pass a JSON file an audit wrote"
            % (source, (data.get("kind") if isinstance(data, dict) else type(data).__name__))
        )
    version = str(data.get("schema_version") or "")
    major = _major(SCHEMA_VERSION)
    if _major(version) != major:
        raise SnapshotError(
            "%s has schema_version %s; this audit compares against major version %s only (re-run the audit "
            "with the old collection or drop the baseline)" % (source, version or "(none)", major)
        )
    return data


def _major(version):
    """The major version of a ``schema_version`` string; None when it has none."""
    parts = _version(version) if version else []
    return parts[0] if parts and isinstance(parts[0], int) else None


def _version(version):
    """A ``schema_version`` string as a list of its numeric parts."""
    return LooseVersion(str(version or "0")).version


def _row_value(row, field):
    if field == "dra_gpus_published":
        return ((row.get("node") or {}).get("dra") or {}).get("gpus_published")
    if field in ("allocatable_gpus", "label_driver_version", "mode"):
        return (row.get("node") or {}).get(field)
    return (row.get("facts") or {}).get(field)


def _finding_keys(row):
    return {(f["category"], f["gpu"], f["reason"]): f for f in row.get("findings") or []}


def changes(baseline, snap):
    """What changed from ``baseline`` to ``snap``: rows added/removed, status, fields, findings, mismatches. A
    baseline older than :data:`DRA_SINCE` has no DRA values: its DRA fields and mismatch kinds are not compared
    (they would all read as changed)."""
    with_dra = _version(baseline.get("schema_version")) >= _version(DRA_SINCE)
    fields = CHANGE_FIELDS + (DRA_CHANGE_FIELDS if with_dra else ())
    before = {r["id"]: r for r in baseline.get("fleet") or []}
    after = {r["id"]: r for r in snap["fleet"]}
    out = {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "status": [],
        "fields": [],
        "findings_new": [],
        "findings_resolved": [],
        "mismatches_new": [],
        "mismatches_resolved": [],
    }
    for rid in sorted(set(before) & set(after)):
        b, a = before[rid], after[rid]
        if b["status"] != a["status"]:
            out["status"].append({"id": rid, "before": b["status"], "after": a["status"]})
        if b["status"] == a["status"] == STATUS_OK:
            for field in fields:
                vb, va = _row_value(b, field), _row_value(a, field)
                if vb != va:
                    out["fields"].append({"id": rid, "field": field, "before": vb, "after": va})
            fb, fa = _finding_keys(b), _finding_keys(a)
            for key in sorted(set(fa) - set(fb), key=str):
                out["findings_new"].append(dict(fa[key], id=rid))
            for key in sorted(set(fb) - set(fa), key=str):
                out["findings_resolved"].append(dict(fb[key], id=rid))
            mb = {m["kind"]: m for m in b.get("mismatches") or []}
            ma = {m["kind"]: m for m in a.get("mismatches") or [] if with_dra or m["kind"] not in DRA_KINDS}
            for kind in sorted(set(ma) - set(mb)):
                out["mismatches_new"].append(dict(ma[kind], id=rid))
            for kind in sorted(set(mb) - set(ma)):
                out["mismatches_resolved"].append(dict(mb[kind], id=rid))
    out["total"] = sum(len(v) for v in out.values())
    return out


def same_content(a, b):
    """True when two snapshots differ at most in ``generated_at`` (so a re-run changes no file)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    return _without_timestamp(a) == _without_timestamp(b)


def _without_timestamp(snapshot):
    return {k: v for k, v in snapshot.items() if k != "generated_at"}
