# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Foreign quarantine: a node that a fault-remediation system (NVSentinel, node-problem-detector and the
remediators that act on its conditions) or a person took out of service for reasons of its own.

The remediation systems are recognised by their markers - a taint key, an annotation key or a node condition type
(with status ``True``) - listed as data in :data:`REMEDIATION_MARKERS`; callers add their own (``extra``). A cordon
with no marker and no driver upgrade in progress (the operator's upgrade controller cordons the nodes it works on
and leaves a failed one cordoned) is a foreign cordon of unknown owner. Pure functions over node dicts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import annotations_of, labels_of

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"

#: The upgrade states in which the operator's upgrade controller holds its own cordon on a node (it cordons at
#: cordon-required, uncordons at upgrade-done and leaves an upgrade-failed node cordoned).
CONTROLLER_CORDON_STATES = frozenset(
    (
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "validation-required",
        "uncordon-required",
        "upgrade-failed",
    )
)

MARKER_KINDS = ("taint", "annotation", "condition")

#: Known markers of remediation systems: ``{"kind", "key", "owner"}``.
#: NVSentinel: the annotations its fault-quarantine module writes on the nodes it cordons or taints, the taint keys
#: its integration guide uses as examples (taints are opt-in there, cordons the default), and the node condition
#: types its platform connectors set for fatal faults (NVIDIA/NVSentinel docs/INTEGRATIONS.md and
#: fault-quarantine's common constants, read 2026-12).
#: node-problem-detector: the condition types of its default kernel, docker and systemd monitor configs
#: (kubernetes/node-problem-detector config/*.json); remediators such as draino or Medik8s act on them.
REMEDIATION_MARKERS = tuple(
    [
        {"kind": "annotation", "key": key, "owner": "NVSentinel"}
        for key in (
            "quarantineHealthEvent",
            "quarantineHealthEventIsCordoned",
            "quarantineHealthEventAppliedTaints",
            "latestFaultRemediationState",
        )
    ]
    + [
        {"kind": "taint", "key": key, "owner": "NVSentinel"}
        for key in ("nvidia.com/gpu-xid-error", "nvidia.com/gpu-nvlink-error", "nvidia.com/syslog-xid-error")
    ]
    + [
        {"kind": "condition", "key": key, "owner": "NVSentinel"}
        for key in (
            "GpuMemWatch",
            "GpuThermalWatch",
            "GpuPcieWatch",
            "GpuPowerWatch",
            "GpuInforomWatch",
            "GpuSmWatch",
            "GpuNvlinkWatch",
            "GpuMcuWatch",
            "GpuPmuWatch",
            "GpuDriverWatch",
            "GpuCpusetWatch",
            "SysLogsXIDError",
            "SysLogsSXIDError",
            "SysLogsGPUFallenOff",
            "NVSwitchFatalError",
            "NVSwitchDown",
            "DCGMError",
            "CSPMaintenance",
        )
    ]
    + [
        {"kind": "condition", "key": key, "owner": "node-problem-detector"}
        for key in ("KernelDeadlock", "ReadonlyFilesystem", "CorruptDockerOverlay2", "FrequentKubeletRestart")
    ]
)

#: The owner named for a cordon without a marker.
UNKNOWN_OWNER = "unknown (a cordon with no remediation marker and no driver upgrade in progress)"


def markers(extra=()):
    """The known markers plus ``extra`` (each ``{"kind", "key"}`` and an optional ``owner``), checked."""
    out = list(REMEDIATION_MARKERS)
    for index, marker in enumerate(extra or ()):
        if not isinstance(marker, dict) or marker.get("kind") not in MARKER_KINDS or not marker.get("key"):
            raise ArgumentError(
                "quarantine_markers[%d] is %r; give kind (one of %s) and key, for example "
                "{kind: taint, key: example.com/remediation, owner: our-remediator}"
                % (index, marker, ", ".join(MARKER_KINDS))
            )
        out.append({"kind": marker["kind"], "key": str(marker["key"]), "owner": marker.get("owner") or "user-listed"})
    return out


def _found(node, marker):
    """The evidence of one marker on the node, or None."""
    kind, key = marker["kind"], marker["key"]
    if kind == "annotation":
        value = annotations_of(node).get(key)
        return None if value is None else {"value": str(value)[:200]}
    if kind == "taint":
        taint = next((t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == key), None)
        return None if taint is None else {"value": taint.get("value"), "effect": taint.get("effect")}
    conditions = (node.get("status") or {}).get("conditions") or []
    cond = next((c for c in conditions if c.get("type") == key and c.get("status") == "True"), None)
    return None if cond is None else {"reason": cond.get("reason"), "message": (cond.get("message") or "")[:200]}


def foreign_cordon(node):
    """True when the node is cordoned and the operator's upgrade controller is not the one holding the cordon."""
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    return cordoned and labels_of(node).get(UPGRADE_STATE_LABEL) not in CONTROLLER_CORDON_STATES


def quarantine_evidence(node, known):
    """The evidence that someone else took the node out of service, ``[{"kind", "key", "owner", ...}]``: each
    marker of ``known`` it carries, and its cordon (``kind: cordon``) when the upgrade controller does not hold it.
    Empty when the node is not quarantined."""
    evidence = []
    for marker in known:
        found = _found(node, marker)
        if found is not None:
            evidence.append(dict(found, kind=marker["kind"], key=marker["key"], owner=marker["owner"]))
    if foreign_cordon(node):
        owners = sorted({e["owner"] for e in evidence})
        owner = ", ".join(owners) if owners else UNKNOWN_OWNER
        evidence.append({"kind": "cordon", "key": "spec.unschedulable", "owner": owner})
    return evidence


def owners_of(evidence):
    """The owners the evidence names, sorted (the unknown owner of a bare cordon last)."""
    return sorted({e["owner"] for e in evidence}, key=lambda o: (o == UNKNOWN_OWNER, o))


def evidence_text(evidence):
    """One line of evidence: ``taint nvidia.com/gpu-xid-error=true:NoSchedule (NVSentinel), cordon (...)``."""
    parts = []
    for e in evidence:
        if e["kind"] == "taint":
            what = "taint %s=%s:%s" % (e["key"], e.get("value") or "", e.get("effect"))
        elif e["kind"] == "annotation":
            what = "annotation %s" % e["key"]
        elif e["kind"] == "condition":
            what = "condition %s=True (%s)" % (e["key"], e.get("reason") or "no reason")
        else:
            what = "cordon"
        parts.append("%s [%s]" % (what, e["owner"]))
    return ", ".join(parts)


def quarantine_fix(evidence):
    """What to do about a node someone else took out of service: leave it to its owner."""
    owners = [o for o in owners_of(evidence) if o != UNKNOWN_OWNER]
    if owners:
        return (
            "%s owns the node: leave it to it (do not uncordon or untaint it by hand); it gives the node back when its "
            "remediation ends, or release it there" % " and ".join(owners)
        )
    return (
        "someone cordoned the node outside any driver upgrade: find out who (the node's events, your remediation "
        "tooling) and uncordon it once that work is done, or list that tool's taint or annotation in "
        "quarantine_markers"
    )
