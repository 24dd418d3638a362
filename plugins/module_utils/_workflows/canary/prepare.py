# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The prepare step: the operands and the NFD worker tolerate the canary taint, every node not yet proven is held
by the skip label, the record is saved, and only then is the driver pointed at the target version. Nothing moves
after it: the operator's upgrade controller leaves skip-labelled nodes in upgrade-required."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.cluster_view import UPGRADE_SKIP_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.driver import set_driver_version
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import wave_nodes
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import (
    cluster_policy_path,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.taints import (
    template_tolerations,
    with_toleration,
)


def ensure_tolerations(session, cp, hold_operands=False):
    """Every operand (ClusterPolicy ``daemonsets.tolerations``) and the NFD worker tolerate the canary taint.

    With ``hold_operands`` the operand DaemonSets also switch to ``OnDelete`` in the same patch, so that neither
    the new toleration nor a chart upgrade restarts operands on nodes outside the current wave (the wave step
    renews them wave by wave). True if anything changed."""
    key, effect = session.taint_key, session.taint_effect
    changed = False
    dsspec = (cp.get("spec") or {}).get("daemonsets") or {}
    tols, need = with_toleration(dsspec.get("tolerations"), key, effect)
    patch = {"tolerations": tols} if need else {}
    if hold_operands and dsspec.get("updateStrategy") != "OnDelete":
        patch["updateStrategy"] = "OnDelete"
    if patch:
        what = " and ".join(
            "toleration %s:%s" % (key, effect) if k == "tolerations" else "updateStrategy=OnDelete"
            for k in sorted(patch)
        )
        session.write(
            "ClusterPolicy %s: set spec.daemonsets %s" % (name_of(cp), what),
            "PATCH",
            cluster_policy_path(cp),
            {"spec": {"daemonsets": patch}},
        )
        changed = True
    for ds in session.nfd_daemonsets():
        tols, need = with_toleration(template_tolerations(ds), key, effect)
        if need:
            session.write(
                "DaemonSet %s/%s: add toleration %s:%s" % (session.ns, name_of(ds), key, effect),
                "PATCH",
                "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (quote(session.ns, safe=""), quote(name_of(ds), safe="")),
                {"spec": {"template": {"spec": {"tolerations": tols}}}},
            )
            changed = True
    return changed


def prepare(session, record, nodes, cp, policy, hold_operands=False):
    """Tolerations first, then the skip label on every node that is not proven, then the record, then the target
    version (``policy`` merged into the driver's ``upgradePolicy``). Returns the record."""
    if hold_operands and "operand_strategy" not in record:
        record["operand_strategy"] = ((cp.get("spec") or {}).get("daemonsets") or {}).get("updateStrategy")
    ensure_tolerations(session, cp, hold_operands)
    by_name = {name_of(n): n for n in nodes}
    labelled = set(record.get("skip_labelled") or [])
    for n in wave_nodes(record, skip_proven=True) + list(record.get("unplanned") or []):
        node = by_name.get(n)
        if node is not None and session.label_node(node, {UPGRADE_SKIP_LABEL: "true"}, "hold the upgrade (skip label)"):
            labelled.add(n)
    record["skip_labelled"] = sorted(labelled)
    session.save_record(record)
    set_driver_version(session, cp, (record.get("target") or {}).get("driver_version"), policy)
    return record
