# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""What a wave does with the pods on its nodes: GPU workloads evicted (through the Eviction API, so
PodDisruptionBudgets hold) or waited for before the nodes are released, and, after the upgrade, operand pods whose
images differ from their ``OnDelete`` DaemonSet's renewed (and proven: the operand versions)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from functools import partial
from urllib.parse import quote

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    key_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.errors import CanaryAbort
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.pods import (
    active_gpu_pods,
    parse_selector,
    selector_matches,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.progress import report
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.session import about


def evict(session, pod):
    """POST an Eviction for ``pod``; False when a PodDisruptionBudget refuses it (HTTP 429)."""
    ns, name = namespace_of(pod), name_of(pod)
    path = "/api/v1/namespaces/%s/pods/%s/eviction" % (quote(ns, safe=""), quote(name, safe=""))
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
    change = "evict pod %s/%s from node %s" % (ns, name, (pod.get("spec") or {}).get("nodeName"))
    try:
        session.act(change, partial(session.client.send, "POST", path, body=body, what=change, accept_statuses=(404,)))
    except K8sError as exc:
        if exc.status == 429:
            return False
        raise
    return True


def handle_workloads(session, wave, nodes, opts, timer):
    """Wait for the pods that ``opts["wait_selector"]`` (waitForCompletion) selects, then evict (``evict``), wait
    for (``wait``) or leave (``none``), as ``opts["policy"]`` says, the other GPU pods of the wave's ``nodes`` (the
    caller leaves out those whose driver restarts in place: the operator keeps their workloads running); returns the
    evicted pods. CanaryAbort when some are still there ``opts["eviction_timeout"]`` seconds after
    ``timer["since"]``; ``opts`` are :func:`.wave.run_wave`'s."""
    members = set(nodes)
    policy = opts.get("policy", "evict")
    terms = parse_selector(opts.get("wait_selector") or "")
    timeout = opts.get("eviction_timeout", 600)
    deadline = timer["since"] + timeout
    evicted, still = [], {}

    def check():
        pods = active_gpu_pods(session.all_pods(), members)
        if policy == "wait":
            waiting, others = pods, []
        else:
            waiting = [p for p in pods if terms and selector_matches(labels_of(p), terms)]
            others = [p for p in pods if p not in waiting]
        still.clear()
        still.update((key_of(p), "still running, waited for") for p in waiting)
        if policy == "evict":
            for pod in others:
                ref = key_of(pod)
                if not evict(session, pod):
                    still[ref] = "a PodDisruptionBudget refuses its eviction"
                elif ref not in evicted:
                    evicted.append(ref)
        return not still, sorted(still)

    def progress():
        details = ["%s: %s" % item for item in sorted(still.items())]
        head = "%d GPU pod(s) still on the wave's nodes" % len(still)
        return report(wave["name"] + " workloads", session.clock() - timer["since"], timeout, head, details)

    if session.check_mode:
        check()  # records the evictions it would make
        return evicted
    done, left = session.wait(deadline, check, progress, about(members))
    if not done:
        raise CanaryAbort(
            "GPU workloads on %s did not finish or could not be evicted within %d s: %s (a PodDisruptionBudget "
            "allows no disruption, or a waitForCompletion job is still running); raise eviction_timeout or "
            "move them" % (wave["name"], timeout, ", ".join(left)),
            wave=wave["index"],
        )
    return evicted


def _held(daemonsets):
    """``(name, pod selector, template images)`` of each ``OnDelete`` operand DaemonSet but the driver's (the
    upgrade controller renews that one)."""
    for ds in daemonsets:
        spec = ds.get("spec") or {}
        tmpl = spec.get("template") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        if (spec.get("updateStrategy") or {}).get("type") != "OnDelete" or not match:
            continue
        if labels_of(tmpl).get("app.kubernetes.io/component") == "nvidia-driver":
            continue
        yield name_of(ds), match, [c.get("image") for c in (tmpl.get("spec") or {}).get("containers") or []]


def _operand_pods(daemonsets, pods, members):
    """``(daemonset, pod, node, images wanted, images run)`` of every live pod of a held DaemonSet on
    ``members``."""
    for ds, match, want in _held(daemonsets):
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node not in members or meta_of(pod).get("deletionTimestamp"):
                continue
            if any(labels_of(pod).get(k) != v for k, v in match.items()):
                continue
            yield ds, pod, node, want, [c.get("image") for c in (pod.get("spec") or {}).get("containers") or []]


def roll_operands(session, members, renewed, daemonsets, pods):
    """Delete the operand pods on ``members`` (of the operator's ``pods``) whose images differ from their held
    DaemonSet's template (of ``daemonsets``); the DaemonSet controller recreates them. ``renewed`` (``{node:
    [DaemonSet]}``) gains each; returns the pods."""
    out = []
    for ds, pod, node, want, have in _operand_pods(daemonsets, pods, set(members)):
        if have == want:
            continue
        name = name_of(pod)
        change = "renew operand pod %s/%s on node %s (%s)" % (
            session.ns,
            name,
            node,
            ", ".join(w for w in want if w not in have) or "new template",
        )
        session.act(change, partial(session.client.delete_pod, session.ns, name))
        renewed.setdefault(node, [])
        if ds not in renewed[node]:
            renewed[node].append(ds)
        out.append("%s/%s" % (session.ns, name))
    return out


def operand_versions(daemonsets, pods, members, renewed):
    """``{node: [problems]}``: a held operand pod on a member that runs other images than its DaemonSet's
    template, or a renewed one that has no pod yet."""
    problems = {}
    running = set()
    for ds, pod, node, want, have in _operand_pods(daemonsets, pods, set(members)):
        running.add((node, ds))
        if have != want:
            problems.setdefault(node, []).append(
                "operand pod %s runs %s, not %s" % (name_of(pod), ", ".join(map(str, have)), ", ".join(map(str, want)))
            )
    for node in members:
        for ds in (renewed or {}).get(node) or []:
            if (node, ds) not in running:
                problems.setdefault(node, []).append("operand %s has no pod yet after its renewal" % ds)
    return problems
