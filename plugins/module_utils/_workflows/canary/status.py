# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The status step (read-only, no target needed): the recorded plan and phase, each planned node's state, the
reason of the last failure, what a canary upgrade left on the cluster and the command that goes on from there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_stalls import (
    read_stalls,
    stall_lines,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.upgrade_status import (
    nodes_in_flight,
    policy_status,
    running_release,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import (
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    cluster_policy_view,
    gpu_labels,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.quarantine import (
    evidence_text,
    markers,
    quarantine_evidence,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import value_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import FAILED_ANNOTATION
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    PHASE_ABORTED,
    PHASE_DONE,
    PHASE_IN_PROGRESS,
    PHASE_ROLLED_BACK,
    PHASE_ROLLING_BACK,
    UNFINISHED,
    WAVE_PENDING,
    source_text,
    target_text,
    wave_nodes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import template_tolerations

ROLLBACK = "step=rollback (gpu_canary_upgrade_action=rollback with the role; no target needed)"
TOLERATION = "the canary toleration %s:%s on %s"


def _ours(tolerations, key, effect):
    return {"key": key, "operator": "Exists", "effect": effect} in (tolerations or [])


def _names(names, most=10):
    shown = ", ".join(names[:most]) + (" and %d more" % (len(names) - most) if len(names) > most else "")
    return "%d node(s): %s" % (len(names), shown)


def _tainted(node, key):
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def _cluster_policy_leftovers(record, cp, key, effect):
    rec = record or {}
    prepared = rec.get("prepared")
    kept = (prepared or {}).get("tolerations") or {}
    spec = cp.get("spec") or {}
    dsspec = spec.get("daemonsets") or {}
    out = []
    if _ours(dsspec.get("tolerations"), key, effect) and ("cluster_policy" in kept or prepared is None):
        out.append(TOLERATION % (key, effect, "the operands of ClusterPolicy " + name_of(cp)))
    if "operand_strategy" in rec and dsspec.get("updateStrategy") not in (rec["operand_strategy"], None):
        out.append(
            "updateStrategy %s on the operands of ClusterPolicy %s (it was %s)"
            % (dsspec.get("updateStrategy"), name_of(cp), rec["operand_strategy"] or "the default")
        )
    if rec.get("phase") not in UNFINISHED:
        return out
    driver = spec.get("driver") or {}
    policy = driver.get("upgradePolicy") or {}
    for k, was in sorted(((prepared or {}).get("upgrade_policy") or {}).items()):
        if policy.get(k) != was:
            out.append(
                "driver.upgradePolicy.%s=%s in ClusterPolicy %s (it was %s)"
                % (k, value_text(policy.get(k)), name_of(cp), value_text(was))
            )
    target, source = (rec.get("target") or {}).get("driver_version"), (rec.get("from") or {}).get("driver_version")
    if target and driver.get("version") == target != source:
        out.append("driver version %s in ClusterPolicy %s (it was %s)" % (target, name_of(cp), value_text(source)))
    return out


def leftovers(record, cp, nfd_daemonsets, nodes, key, effect):
    """Sentence parts naming what a canary upgrade left on the cluster: the record while unfinished, the canary
    tolerations, the operands' update strategy, the upgrade policy and driver version while unfinished, canary taints,
    failure annotations, and the skip labels the run set while unfinished."""
    rec = record or {}
    unfinished = rec.get("phase") in UNFINISHED
    out = ["the progress record (phase %s)" % rec["phase"]] if unfinished else []
    if cp:
        out.extend(_cluster_policy_leftovers(record, cp, key, effect))
    kept = ((rec.get("prepared") or {}).get("tolerations") or {}).get("nfd") or {}
    for ds in nfd_daemonsets:
        if _ours(template_tolerations(ds), key, effect) and (name_of(ds) in kept or "prepared" not in rec):
            out.append(TOLERATION % (key, effect, "DaemonSet " + name_of(ds)))
    tainted = sorted(name_of(n) for n in nodes if _tainted(n, key))
    if tainted:
        out.append("the canary taint %s on %s" % (key, _names(tainted)))
    failed = sorted(name_of(n) for n in nodes if FAILED_ANNOTATION in annotations_of(n))
    if failed:
        out.append("the failure annotation %s on %s" % (FAILED_ANNOTATION, _names(failed)))
    ours = set(rec.get("skip_labelled") or [])
    held = sorted(name_of(n) for n in nodes if name_of(n) in ours and labels_of(n).get(UPGRADE_SKIP_LABEL) == "true")
    if unfinished and held:
        out.append("the skip label %s=true on %s" % (UPGRADE_SKIP_LABEL, _names(held)))
    return out


def _next(phase, left):
    if phase in (PHASE_IN_PROGRESS, PHASE_ABORTED):
        return "Fix the cause and run the same upgrade again to resume it, or undo it with %s." % ROLLBACK
    if phase in UNFINISHED:
        return "Run %s again once the nodes named above can come back; it finishes the cleanup." % ROLLBACK
    if left:
        return "No canary upgrade is under way: remove what is left by hand (kubectl edit, taint, label, annotate)."
    return "Nothing is left to clean up."


def node_state(node, key):
    """What the status shows of one node: upgrade state, driver, skip label, canary taint, cordon, failure."""
    labels = labels_of(node)
    return {
        "upgrade_state": labels.get(UPGRADE_STATE_LABEL),
        # GFD's driver labels, the deprecated names too (one reader: cluster_view)
        "driver_version": gpu_labels(labels)["driver_version"],
        "skip": labels.get(UPGRADE_SKIP_LABEL) == "true",
        "tainted": _tainted(node, key),
        "cordoned": bool((node.get("spec") or {}).get("unschedulable")),
        "failure": annotations_of(node).get(FAILED_ANNOTATION),
    }


def _node_line(name, state):
    if state is None:
        return "  %s: not in the cluster" % name
    parts = [state["upgrade_state"] or "no upgrade state", "driver %s" % (state["driver_version"] or "unknown")]
    parts += [word for word, on in (("held by the skip label", state["skip"]), ("tainted", state["tainted"])) if on]
    parts += ["cordoned"] * state["cordoned"] + ["failed: %s" % state["failure"]] * bool(state["failure"])
    return "  %s: %s" % (name, ", ".join(parts))


def _wave_lines(wave, states, phase=None):
    names = wave.get("nodes") or []
    status = wave.get("status") or WAVE_PENDING
    if status != WAVE_PENDING and phase in (PHASE_ROLLING_BACK, PHASE_ROLLED_BACK):
        # a rollback undoes every wave: what a wave was is history, not where its nodes are
        status = "%s, was %s" % ("rolled back" if phase == PHASE_ROLLED_BACK else "rolling back", status)
    if status == WAVE_PENDING:
        held = sum(1 for n in names if (states.get(n) or {}).get("skip"))
        return ["%s [%s]: %d node(s), %d held by the skip label" % (wave["name"], status, len(names), held)]
    head = "%s [%s]: %d node(s)" % (wave["name"], status, len(names))
    head += "; %s" % wave["reason"] if wave.get("reason") else ""
    return [head] + [_node_line(n, states.get(n)) for n in names]


def _quarantine(rec, by_name, key):
    """``{node: state and evidence}`` of the nodes the record left out because someone else quarantined them."""
    known = markers()
    return {
        n: dict(node_state(by_name[n], key), evidence=quarantine_evidence(by_name[n], known))
        for n in rec.get("quarantined") or []
        if n in by_name
    }


def _quarantine_lines(found):
    if not found:
        return []
    lines = [
        "Left out, quarantined by someone else (never uncordoned or untainted; on its old driver with the skip label "
        "- remove the label once the owner releases the node and the upgrade controller upgrades it): %d node(s)"
        % len(found)
    ]
    return lines + [
        "%s; %s" % (_node_line(n, found[n]), evidence_text(found[n]["evidence"]) or "released since")
        for n in sorted(found)
    ]


def _stall_lines(stalls, most=20):
    if not stalls:
        return []
    head = "Driver upgrades not done (NVIDIA's upgrade controller), %d node(s), %d stalled:" % (
        len(stalls),
        sum(1 for s in stalls if s["stalled"]),
    )
    shown = sorted(stalls, key=lambda s: not s["stalled"])[:most]
    more = ["  ... and %d more" % (len(stalls) - most)] if len(stalls) > most else []
    return [head] + stall_lines(shown) + more


#: What the status step read of the cluster: the ClusterPolicy, the NFD DaemonSets, the nodes, and the nodes whose
#: driver upgrade is not done (``stalls``, see ``_operator.upgrade_stalls.diagnose``), recorded or not.
Observed = namedtuple("Observed", "cp nfd_daemonsets nodes stalls", defaults=((),))


def describe(record, observed, where, taint):
    """The status of the canary upgrade recorded in ConfigMap ``where`` (``namespace/name``) on the cluster as
    ``observed`` (an :class:`Observed`; ``taint``: the default ``(key, effect)`` when there is no record), with
    ``lines`` for people."""
    cp, nfd_daemonsets, nodes, stalls = observed
    rec = record or {}
    key, effect = (rec.get("taint") or {}).get("key") or taint[0], (rec.get("taint") or {}).get("effect") or taint[1]
    by_name = {name_of(n): n for n in nodes}
    states = {n: node_state(by_name[n], key) for n in wave_nodes(rec) if n in by_name} if record else {}
    left = leftovers(record, cp, nfd_daemonsets, nodes, key, effect)
    # a finished upgrade keeps its tolerations on purpose: every operand pod carries them
    kept = [x for x in left if x.startswith("the canary toleration")] if rec.get("phase") == PHASE_DONE else []
    left = [x for x in left if x not in kept]
    out = {
        "record": where,
        "phase": rec.get("phase"),
        "unfinished": rec.get("phase") in UNFINISHED,
        "target": rec.get("target"),
        "from": rec.get("from"),
        "started": rec.get("started"),
        "updated": rec.get("updated"),
        "reason": rec.get("reason"),
        "waves": [
            {k: w.get(k) for k in ("index", "name", "status", "reason", "nodes")} for w in rec.get("waves") or []
        ],
        "nodes": states,
        "upgrades": list(stalls),
        "foreign_quarantine": _quarantine(rec, by_name, key),
        "leftovers": left,
        "kept": kept,
        "next": _next(rec.get("phase"), left),
        "policy_status": policy_status(
            cluster_policy_view([cp] if cp else None), running_release(cp)[0], nodes_in_flight(nodes)
        ),
    }
    if record:
        lines = [
            "Canary upgrade to %s (from %s), record %s: phase %s (started %s, updated %s)."
            % (
                target_text(rec.get("target")),
                source_text(rec.get("from")),
                where,
                rec.get("phase"),
                rec.get("started"),
                rec.get("updated"),
            )
        ]
        lines += ["Last failure: %s" % rec["reason"]] if rec.get("reason") else []
        for wave in rec.get("waves") or []:
            lines.extend(_wave_lines(wave, states, rec.get("phase")))
        lines.extend(_quarantine_lines(out["foreign_quarantine"]))
    else:
        lines = ["No canary upgrade is recorded in ConfigMap %s." % where]
    lines.append(
        "Left on the cluster: %s." % "; ".join(left) if left else "Nothing of a canary upgrade is left on the cluster."
    )
    if kept:
        lines.append(
            "Kept after the upgrade: %s (every operand pod carries it; taking it back would restart them all, a "
            "chart upgrade without it drops it)." % "; ".join(kept)
        )
    lines.extend(_stall_lines(out["upgrades"]))
    if out["policy_status"]["meaning"] in ("upgrading", "not-proven"):
        lines.append("Operator: %s." % out["policy_status"]["text"])
    out["lines"] = lines + [out["next"]]
    return out


def status(session):
    """The status step: reads the record, the ClusterPolicy, the NFD DaemonSets and the nodes (and, where a driver
    upgrade is not done, the pods, PodDisruptionBudgets and upgrade events); writes nothing."""
    cp = session.cluster_policy()
    nodes = session.nodes()
    record = session.read_record()
    observed = Observed(
        cp,
        session.nfd_daemonsets() if cp else [],
        nodes,
        read_stalls(session.client, nodes, cp, session.page_size, session.clock()),
    )
    return describe(
        record, observed, "%s/%s" % (session.ns, session.cm_name), (session.taint_key, session.taint_effect)
    )
