# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The gate of the plan: what on the cluster must be fixed before any node moves, and what the waves will meet
(the PodDisruptionBudgets and GPU jobs on planned nodes, the CUDA versions of the running workloads)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    key_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.cluster_view import UPGRADE_STATE_LABEL
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.cuda import (
    cuda_check,
    cuda_image_rules,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.managed import refusals
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.names import FAILED_ANNOTATION
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    active_gpu_pods,
    parse_selector,
    selector_matches,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.record import WAVE_FAILED

_EXPRESSION_MATCHES = {
    "In": lambda labels, key, values: labels.get(key) in values,
    "NotIn": lambda labels, key, values: labels.get(key) not in values,
    "Exists": lambda labels, key, values: key in labels,
    "DoesNotExist": lambda labels, key, values: key not in labels,
}


def _pdb_matches(pdb, pod):
    """True if the PodDisruptionBudget's (non-empty) selector selects the pod of its namespace."""
    if namespace_of(pdb) != namespace_of(pod):
        return False
    sel = (pdb.get("spec") or {}).get("selector") or {}
    labels = labels_of(pod)
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for expr in sel.get("matchExpressions") or []:
        match = _EXPRESSION_MATCHES.get(expr.get("operator"))
        if match and not match(labels, expr.get("key"), expr.get("values") or []):
            return False
    return bool(sel.get("matchLabels") or sel.get("matchExpressions"))


def _node_failures(nodes, planned, ours_failed):
    """The planned nodes in ``upgrade-failed`` from an earlier upgrade (not this run's failed wave)."""
    failures = []
    for node in nodes:
        n = name_of(node)
        if n not in planned:
            continue
        state = labels_of(node).get(UPGRADE_STATE_LABEL)
        if state == "upgrade-failed" and n not in ours_failed and FAILED_ANNOTATION not in annotations_of(node):
            failures.append(
                "node %s is in upgrade-failed from an earlier upgrade; fix it and relabel it "
                "%s=upgrade-required (or exclude it) before a canary upgrade" % (n, UPGRADE_STATE_LABEL)
            )
    return failures


def _gpu_jobs(pods, pdbs, planned, wait_selector):
    """``(jobs, pdbs)``: the GPU pods on planned nodes (with the PDBs that cover them and whether they are waited
    for) and those PDBs."""
    terms = parse_selector(wait_selector)
    jobs, covered = [], {}
    for pod in active_gpu_pods(pods, planned):
        pod_pdbs = [pdb for pdb in pdbs if _pdb_matches(pdb, pod)]
        for pdb in pod_pdbs:
            covered.setdefault(key_of(pdb), pdb)
        jobs.append(
            {
                "pod": key_of(pod),
                "node": (pod.get("spec") or {}).get("nodeName"),
                "started": (pod.get("status") or {}).get("startTime") or meta_of(pod).get("creationTimestamp"),
                "wait_for_completion": bool(terms) and selector_matches(labels_of(pod), terms),
                "pdbs": [key_of(p) for p in pod_pdbs],
            }
        )
    pdb_list = [
        {
            "name": ref,
            "disruptions_allowed": (pdb.get("status") or {}).get("disruptionsAllowed"),
            "min_available": (pdb.get("spec") or {}).get("minAvailable"),
            "max_unavailable": (pdb.get("spec") or {}).get("maxUnavailable"),
        }
        for ref, pdb in sorted(covered.items())
    ]
    return sorted(jobs, key=lambda j: j["pod"]), pdb_list


#: What the plan read of the cluster: the nodes, every pod, the PodDisruptionBudgets, the driver DaemonSets, the
#: ClusterPolicy and the NVIDIADrivers (none outside that mode).
Cluster = namedtuple("Cluster", "nodes pods pdbs daemonsets cp nvidia_drivers", defaults=((), None, ()))


def gate(cluster, planned, record, options, quarantine_failures=()):
    """The cluster part of the gate: ``{"passed", "failures", "unmanaged", "pdbs", "gpu_jobs", "cuda"}``.

    Refuses, before any write, a change the operator would never make on a planned node (see :mod:`.managed`: a
    ``driver_version`` where the driver is preinstalled or disabled, a toolkit, device plugin or MIG setting in the
    ``chart_values`` where that operand is disabled); ``options`` is the run's :class:`.CanaryOptions`.

    Fails on a planned node in ``upgrade-failed`` that this run did not leave there (the record's failed wave is ours to
    retry) and with ``quarantine_failures`` (see :func:`.quarantine.failures`: foreign-quarantined nodes are left out of
    the waves, not failures, unless they use up ``maxUnavailable`` or the caller refuses them). Lists the
    PodDisruptionBudgets that cover GPU pods on planned nodes and the GPU jobs there (those that match the
    waitForCompletion selector are waited for). Fails when a running GPU workload on a planned node needs a newer driver
    than ``driver_version`` for its image's CUDA version (``cuda``, see :func:`.cuda.cuda_check`).
    """
    planned = set(planned)
    target_driver = options.driver_version or None
    waves = (record or {}).get("waves") or []
    ours_failed = {n for wave in waves if wave.get("status") == WAVE_FAILED for n in wave.get("nodes") or []}
    failures, unmanaged = refusals(
        [n for n in cluster.nodes if name_of(n) in planned],
        cluster.cp,
        target_driver,
        options.chart_values,
        cluster.nvidia_drivers,
    )
    failures.extend(_node_failures(cluster.nodes, planned, ours_failed))
    failures.extend(quarantine_failures)
    jobs, pdb_list = _gpu_jobs(cluster.pods, cluster.pdbs, planned, options.wait_for_completion_selector)
    cuda = cuda_check(cluster.pods, planned, target_driver, cuda_image_rules(options.cuda_images))
    failures.extend(cuda["failures"])
    return {
        "passed": not failures,
        "failures": failures,
        "unmanaged": unmanaged,
        "pdbs": pdb_list,
        "gpu_jobs": jobs,
        "cuda": cuda,
    }
