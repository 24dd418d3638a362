# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage findings of a pod's DRA claims, from a :class:`.claims.PodClaims` (pure), all at the ``dra`` layer (the
scheduler's message is their evidence): what the DRA machinery lacks (the claim or its template, the DeviceClass,
untainted devices, a prepared claim), what the request cannot get (enough devices on any node, a matching device, a
free one, the node its claim is allocated on), and a pod asking for ``nvidia.com/gpu`` where GPUs come only through
DRA. The ``scheduling`` layer keeps what the scheduler decides beyond devices."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import key_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.dra_judgement import device_taint_fix
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    about_nodes,
    event_evidence,
    finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import latest_event

CLAIM_FIX = (
    "Use a ResourceClaim with device class gpu.nvidia.com instead: a ResourceClaimTemplate with spec.spec.devices."
    "requests [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: N}}], the pod's spec.resourceClaims "
    "[{name: gpu, resourceClaimTemplateName: <template>}] and the container's resources.claims [{name: gpu}] in place "
    "of resources.limits %s."
)


def claim_findings(claims, candidates, fits_somewhere, evidence):
    """The claims' findings for a Pending pod; ``candidates``: the GPU nodes that pass the cordon, taint and
    selector filters."""
    out = [_unresolved(claims, e, evidence) for e in claims.unresolved]
    for entry in claims.entries:
        if entry["status"] == "allocated" and not any(claims.allocated_on(entry["claim"], n) for n in candidates):
            out.append(_elsewhere(claims, entry["claim"], candidates, evidence))
    if out or fits_somewhere:
        return out
    for entry in claims.entries:
        if entry["status"] == "pending":
            out.extend(_unsatisfied(claims, entry["claim"], candidates, evidence))
    return out


def _unresolved(claims, entry, evidence):
    event = latest_event(claims.events, "FailedResourceClaimCreation")
    ev = dict(evidence, claim_entry=entry["name"], template=entry["template"], event=event_evidence(event))
    if entry["status"] == "missing":
        return finding(
            "dra",
            "ClaimNotFound",
            "error",
            "pod %s uses ResourceClaim %s/%s, which does not exist: the scheduler waits for it"
            % (claims.key, claims.ns, entry["claim_name"]),
            "Create the claim, or reference a ResourceClaimTemplate (resourceClaimTemplateName) so that each "
            "pod gets its own claim.",
            ev,
        )
    if entry["status"] == "deleting":
        return finding(
            "dra",
            "ClaimBeingDeleted",
            "error",
            "ResourceClaim %s of pod %s is being deleted" % (key_of(entry["claim"]), claims.key),
            "Recreate the pod once the claim is gone (a claim made from a template is made again for the new pod).",
            ev,
        )
    if entry["template"] not in claims.templates:
        return finding(
            "dra",
            "ClaimTemplateNotFound",
            "error",
            "pod %s: ResourceClaimTemplate %s/%s does not exist, so no claim is made for entry %s and the "
            "scheduler does not try the pod" % (claims.key, claims.ns, entry["template"], entry["name"]),
            "Create the ResourceClaimTemplate %s in %s (or fix the name in spec.resourceClaims)."
            % (entry["template"], claims.ns),
            ev,
        )
    return finding(
        "dra",
        "ClaimNotCreated",
        "error",
        "pod %s: the claim for entry %s (template %s) has not been made yet, so the scheduler does not try "
        "the pod" % (claims.key, entry["name"], entry["template"]),
        "kube-controller-manager's resource-claim controller makes it: check that the controller manager runs "
        "and read the pod's FailedResourceClaimCreation events.",
        ev,
    )


def _elsewhere(claims, claim, candidates, evidence):
    status = claim["status"]
    where = sorted(n for n in claims.nodes if claims.allocated_on(claim, n))
    users = sorted("%s/%s" % (claims.ns, r.get("name")) for r in status.get("reservedFor") or [])
    return about_nodes(
        where,
        finding(
            "dra",
            "ClaimAllocatedElsewhere",
            "error",
            "ResourceClaim %s is allocated on %s%s, but pod %s can only go to %s (cordon, taints, selectors)"
            % (
                key_of(claim),
                ", ".join(where) or "no known node",
                " (in use by %s)" % ", ".join(users) if users else "",
                claims.key,
                ", ".join(candidates) or "no GPU node",
            ),
            "A claim's devices stay where they were allocated: let the pod run on %s (its nodeSelector/affinity), "
            "or give each pod its own claim through a ResourceClaimTemplate." % (", ".join(where) or "that node"),
            dict(evidence, allocation_nodes=where, reserved_for=users, candidates=list(candidates)),
        ),
    )


def _unsatisfied(claims, claim, candidates, evidence):
    """One finding per cause that keeps the claim from the ``candidates`` (nodes grouped by their cause)."""
    by_cause = {}
    for node in candidates:
        cause, detail = claims.verdict(claim, node)
        by_cause.setdefault(cause, []).append((node, detail))
    causes = ("class", "selectors", "too-few", "taint", "allocated", "no-devices")
    return [_cause(claims, c, claim, by_cause[c], evidence, len(candidates)) for c in causes if c in by_cause]


def _cause(claims, cause, claim, rows, evidence, candidates):
    nodes = [n for n, _d in rows]
    detail = rows[0][1]
    name = "request %s of claim %s" % (detail.get("request"), key_of(claim))
    ev = dict(evidence, claim=key_of(claim), per_node=dict(rows))
    if cause == "class":
        return finding(
            "dra",
            "DeviceClassMissing",
            "error",
            "%s asks for DeviceClass %s, which does not exist" % (name, detail["device_class"]),
            "The DRA driver's DeviceClass is gone: the GPU Operator re-creates it at its next reconcile (restart "
            "the gpu-operator pod to hurry it), or create it; kubectl get deviceclasses lists what exists.",
            ev,
        )
    if cause == "selectors":
        offered = {n: claims.offered(n) for n in nodes}
        return about_nodes(
            nodes,
            finding(
                "dra",
                "NoMatchingDevice",
                "error",
                "no device on %s satisfies %s (class %s%s)"
                % (
                    ", ".join(nodes),
                    name,
                    detail["device_class"],
                    "; selectors: %s" % " && ".join(detail["selectors"]) if detail["selectors"] else "",
                ),
                "Change the selectors to what the nodes publish (evidence: offered), or run the pod where such "
                "devices are; gpu_cluster_info lists every device with its attributes.",
                dict(ev, offered=offered),
            ),
        )
    if cause == "too-few":
        most = max(det["matching"] for _n, det in rows)
        return about_nodes(
            nodes,
            finding(
                "dra",
                "ClaimLargerThanAnyNode",
                "error",
                "%s asks for %d device(s) of class %s, and no node it could use publishes more than %d "
                "that match (%s): no node could ever satisfy it, however many devices are freed"
                % (name, detail["need"], detail["device_class"], most, ", ".join(nodes)),
                "Ask for at most %d device(s) per request (exactly.count), and spread the work over several pods, each "
                "with its own claim (a ResourceClaimTemplate)." % most,
                dict(ev, most_matching=most),
            ),
        )
    if cause == "taint":
        tainted = sorted({"%s %s" % (d, ", ".join(t)) for _n, det in rows for d, t in det["tainted"].items()})
        return about_nodes(
            nodes,
            finding(
                "dra",
                "DeviceTaintNotTolerated",
                "error",
                "the only devices on %s that satisfy %s are tainted: %s" % (", ".join(nodes), name, "; ".join(tainted)),
                device_taint_fix([t for _n, det in rows for ts in det["tainted"].values() for t in ts]),
                ev,
            ),
        )
    if cause == "allocated":
        holders = {d: [h["claim"] for h in hs] for _n, det in rows for d, hs in det["holders"].items()}
        pods = sorted({p for _n, det in rows for hs in det["holders"].values() for h in hs for p in h["pods"]})
        return about_nodes(
            nodes,
            finding(
                "dra",
                "DevicesAllocated",
                "error",
                "every device on %s that satisfies %s is allocated (needs %d, %d free): held by %s%s"
                % (
                    ", ".join(nodes),
                    name,
                    detail["need"],
                    detail["free"],
                    ", ".join(sorted({c for cs in holders.values() for c in cs})),
                    " (pods %s)" % ", ".join(pods) if pods else "",
                ),
                "Wait for those pods to finish, delete claims nobody uses (a claim keeps its devices while it "
                "exists), or ask for fewer devices.",
                dict(ev, holders=holders),
            ),
        )
    return about_nodes(
        nodes,
        finding(
            "dra",
            "NoDevicesOnNodes",
            "error" if len(rows) == candidates else "info",
            "%s: %s publish no device the scheduler can allocate (no ResourceSlice, or an incomplete pool)"
            % (name, ", ".join(nodes)),
            "See the node findings of the dra layer.",
            ev,
        ),
    )


def prepare_failure(claims, node_name, plugin_evidence):
    """The finding of a scheduled pod whose claims the kubelet could not prepare (FailedPrepareDynamicResources)."""
    event = latest_event(claims.events, "FailedPrepareDynamicResources")
    if event is None:
        return None
    return about_nodes(
        [node_name],
        finding(
            "dra",
            "PrepareFailed",
            "error",
            "pod %s is scheduled on %s with its claims allocated, but the kubelet cannot prepare them: %s"
            % (claims.key, node_name, event.get("message") or event.get("note")),
            "The DRA driver's kubelet plugin on %s must run and be registered: see the dra layer of the node (its "
            "plugin pod and log); the pod starts once the claims are prepared." % node_name,
            dict(plugin_evidence, event=event_evidence(event)),
        ),
    )


def extended_on_dra(key, requests, nodes, gpu_index):
    """The finding for a pod that asks for ``nvidia.com/gpu`` (or a MIG resource) where no node advertises it but
    nodes publish GPUs through DRA and no DeviceClass maps the resource (``extendedResourceName``); else None."""
    offered = {
        res
        for n in nodes
        for res, v in ((n.get("status") or {}).get("allocatable") or {}).items()
        if str(v) not in ("", "0")
    }
    mapped = {((c.get("spec") or {}).get("extendedResourceName")) for c in (gpu_index.classes or {}).values()}
    missing = sorted(r for r in requests if r not in offered and r not in mapped)
    dra_nodes = sorted(n for n in gpu_index.by_node if gpu_index.raw_devices(n))
    if not missing or not dra_nodes:
        return None
    return about_nodes(
        dra_nodes,
        finding(
            "dra",
            "ExtendedResourceOnDRA",
            "error",
            "pod %s asks for %s, which no node advertises: this cluster offers its GPUs through DRA only (%d node(s) "
            "publish devices of %s: %s)"
            % (key, ", ".join(missing), len(dra_nodes), gpu_index.driver, ", ".join(dra_nodes)),
            CLAIM_FIX % ", ".join(missing),
            {"requested": missing, "dra_nodes": dra_nodes},
        ),
    )
