# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The prepare step and its undoing. Prepare saves the record first (with what it is about to change, as it was),
then holds every node not yet proven with the skip label (the foreign-quarantined nodes too: the upgrade controller
would upgrade a cordoned node outside its slot limit), then makes the operands and the NFD worker tolerate the canary
taint (a change to the driver's pod template, which the upgrade controller takes for an upgrade of every node not
held), and only then points the driver at the target version. Nothing moves after it: the operator's upgrade
controller leaves skip-labelled nodes in upgrade-required. :func:`undo` takes back the tolerations, the operands'
update strategy and the upgrade policy (after the last wave, and by the rollback)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import labels_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import UPGRADE_SKIP_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import (
    crd_mode,
    policy_changes,
    set_driver_version,
    value_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import (
    held_out,
    wave_nodes,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    cluster_policy_path,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import (
    template_tolerations,
    with_toleration,
    without_toleration,
)


def _daemonset_path(session, ds):
    return "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (quote(session.ns, safe=""), quote(name_of(ds), safe=""))


def _toleration_writes(session, cp, prepared, hold_operands):
    """The writes that make the operands (and, with ``hold_operands``, ``OnDelete``) and the NFD DaemonSets tolerate
    the canary taint, as ``(change, method, path, body)``; ``prepared["tolerations"]`` keeps each list it extends,
    as it was."""
    key, effect = session.taint_key, session.taint_effect
    kept = prepared.setdefault("tolerations", {})
    writes = []
    dsspec = (cp.get("spec") or {}).get("daemonsets") or {}
    tols, need = with_toleration(dsspec.get("tolerations"), key, effect)
    patch = {"tolerations": tols} if need else {}
    if need:
        kept.setdefault("cluster_policy", dsspec.get("tolerations"))
    if hold_operands and dsspec.get("updateStrategy") != "OnDelete":
        patch["updateStrategy"] = "OnDelete"
    if patch:
        what = " and ".join(
            "toleration %s:%s" % (key, effect) if k == "tolerations" else "updateStrategy=OnDelete"
            for k in sorted(patch)
        )
        change = "ClusterPolicy %s: set spec.daemonsets %s" % (name_of(cp), what)
        writes.append((change, "PATCH", cluster_policy_path(cp), {"spec": {"daemonsets": patch}}))
    for ds in session.nfd_daemonsets():
        tols, need = with_toleration(template_tolerations(ds), key, effect)
        if need:
            kept.setdefault("nfd", {}).setdefault(name_of(ds), template_tolerations(ds))
            change = "DaemonSet %s/%s: add toleration %s:%s" % (session.ns, name_of(ds), key, effect)
            body = {"spec": {"template": {"spec": {"tolerations": tols}}}}
            writes.append((change, "PATCH", _daemonset_path(session, ds), body))
    return writes


def prepare(session, record, nodes, cp, policy, hold_operands=False):
    """The record (with what the preparation changes, as it was, and the nodes it labels), then the skip label on
    every node that is neither proven nor released (a resumed run leaves the wave under way released), then the
    tolerations, then the target version (``policy`` merged into the driver's ``upgradePolicy``). Returns the
    record."""
    prepared = record.setdefault("prepared", {})
    if hold_operands and "operand_strategy" not in record:
        record["operand_strategy"] = ((cp.get("spec") or {}).get("daemonsets") or {}).get("updateStrategy")
    writes = _toleration_writes(session, cp, prepared, hold_operands)
    for k, (have, _want) in policy_changes(cp, policy).items():
        prepared.setdefault("upgrade_policy", {}).setdefault(k, have)
    if crd_mode(cp) and "nvidia_drivers" not in prepared:
        prepared["nvidia_drivers"] = {
            name_of(d): (d.get("spec") or {}).get("version") for d in session.nvidia_drivers()
        }
    by_name = {name_of(n): n for n in nodes}
    released = {n for w in record["waves"] if w.get("released") for n in w["nodes"]}
    hold = [
        by_name[n]
        for n in wave_nodes(record, skip_proven=True) + held_out(record)
        if n in by_name and n not in released and labels_of(by_name[n]).get(UPGRADE_SKIP_LABEL) != "true"
    ]
    record["skip_labelled"] = sorted(set(record.get("skip_labelled") or []) | {name_of(n) for n in hold})
    session.save_record(record)
    # the skip labels before the tolerations: NVIDIA's controller finds a driver pod out of date by its DaemonSet's
    # controller revision, so the operands' new toleration (the driver's template too) starts an upgrade on every
    # node not yet held
    session.each(
        hold, lambda node: session.label_node(node, {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade (skip label)")
    )
    for write in writes:
        session.write(*write)
    set_driver_version(session, cp, (record.get("target") or {}).get("driver_version"), policy)
    return record


def _restored(tolerations, key, effect, before):
    """``(list, changed)``: ``tolerations`` without the canary one, or ``before`` (None: absent) when that leaves
    none and none was there before."""
    tols, changed = without_toleration(tolerations, key, effect)
    if not tols and not before:
        tols = before
    return tols, changed


def undo(session, record, cp, tolerations=True):
    """Take back what prepare changed for the run (not the driver version): the canary toleration on the operands
    and the NFD worker (unless ``tolerations`` is False: after a finished upgrade every pod carries it, and taking it
    back would restart every operand pod at once), the operands' update strategy and the upgrade policy keys. True
    if anything changed."""
    prepared = record.get("prepared") or {}
    kept = (prepared.get("tolerations") or {}) if tolerations else {}
    key, effect = session.taint_key, session.taint_effect
    spec = cp.get("spec") or {}
    dsspec = spec.get("daemonsets") or {}
    have_policy = (spec.get("driver") or {}).get("upgradePolicy") or {}
    patch, words = {}, []
    if "cluster_policy" in kept:
        tols, changed = _restored(dsspec.get("tolerations"), key, effect, kept["cluster_policy"])
        if changed:
            patch.setdefault("daemonsets", {})["tolerations"] = tols
            words.append("daemonsets.tolerations without %s:%s" % (key, effect))
    if "operand_strategy" in record and dsspec.get("updateStrategy") != record["operand_strategy"]:
        patch.setdefault("daemonsets", {})["updateStrategy"] = record["operand_strategy"]
        words.append("daemonsets.updateStrategy=%s" % value_text(record["operand_strategy"]))
    policy = {k: v for k, v in (prepared.get("upgrade_policy") or {}).items() if have_policy.get(k) != v}
    if policy:
        patch["driver"] = {"upgradePolicy": policy}
        words.extend("driver.upgradePolicy.%s=%s" % (k, value_text(v)) for k, v in sorted(policy.items()))
    if patch:
        change = "ClusterPolicy %s: restore spec.%s" % (name_of(cp), ", spec.".join(words))
        session.write(change, "PATCH", cluster_policy_path(cp), {"spec": patch})
    changed = bool(patch)
    for ds in session.nfd_daemonsets():
        if name_of(ds) not in (kept.get("nfd") or {}):
            continue
        tols, need = _restored(template_tolerations(ds), key, effect, kept["nfd"][name_of(ds)])
        if need:
            change = "DaemonSet %s/%s: remove toleration %s:%s" % (session.ns, name_of(ds), key, effect)
            body = {"spec": {"template": {"spec": {"tolerations": tols}}}}
            session.write(change, "PATCH", _daemonset_path(session, ds), body)
            changed = True
    return changed
