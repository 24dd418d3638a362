# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage of a pod's DRA claims (``spec.resourceClaims``): does each claim exist, is it allocated where the
pod can run, and, if not allocated, can the devices of the nodes it could use satisfy its requests (pure).

The scheduler's own message is terse (``N cannot allocate all claims``); :class:`PodClaims` evaluates each request
against the published devices the way the scheduler does - the DeviceClass, its and the request's CEL selectors,
device taints and the request's tolerations, devices already allocated to other claims, the count - and gives the
cause per node (the findings are in :mod:`.claim_findings`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    key_of,
    meta_of,
    name_of,
    taint_text,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._view.dra_view import (
    blocking,
    class_selects,
    device_value,
    selectors_select,
    taints_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import (
    node_selector_matches,
    tolerates,
)


def _alternatives(request):
    """A request's alternatives: ``exactly``, or the subrequests of ``firstAvailable`` (a prioritized list)."""
    return [request["exactly"]] if request.get("exactly") else list(request.get("firstAvailable") or [])


class PodClaims:
    """The claims of one pod; ``index`` is a ``dra_view.DraIndex`` of every driver, ``nodes`` the node dicts by name,
    ``events`` the pod's events.

    Each entry of :attr:`entries` is ``{"name" (the pod's claim entry), "claim" (raw, or None), "status"}`` with
    status ``missing``, ``not-created``, ``deleting``, ``none`` (the template asked for nothing), ``allocated`` or
    ``pending``.
    """

    def __init__(self, snap, index, nodes, pod, events):
        self.index, self.nodes, self.pod, self.events = index, nodes, pod, events
        self.key = key_of(pod)
        self.ns = meta_of(pod).get("namespace")
        self.templates = {name_of(t) for t in snap.claim_templates or []}
        claims = {key_of(c): c for c in snap.claims or []}
        generated = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        self.entries = []
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            entry = {"name": pc.get("name"), "template": pc.get("resourceClaimTemplateName"), "claim": None}
            claim_name = pc.get("resourceClaimName")
            if entry["template"]:
                status = generated.get(pc.get("name"))
                claim_name = (status or {}).get("resourceClaimName")
                if status is not None and not claim_name:
                    entry["status"] = "none"
                    self.entries.append(entry)
                    continue
            entry["claim"] = claims.get("%s/%s" % (self.ns, claim_name)) if claim_name else None
            entry["claim_name"] = claim_name
            entry["status"] = self._status(entry)
            self.entries.append(entry)
        self._cache = {}

    @staticmethod
    def _status(entry):
        claim = entry["claim"]
        if claim is None:
            return "not-created" if entry["template"] else "missing"
        if meta_of(claim).get("deletionTimestamp"):
            return "deleting"
        return "allocated" if (claim.get("status") or {}).get("allocation") else "pending"

    def summary(self):
        """The pod's claims as returned: ``name`` (the pod's entry), ``template``, ``claim`` (``namespace/name``, null
        while not made) and ``status``."""
        return [
            {
                "name": e["name"],
                "template": e["template"],
                "claim": key_of(e["claim"]) if e["claim"] else None,
                "status": e["status"],
            }
            for e in self.entries
        ]

    @property
    def unresolved(self):
        """Entries whose claim does not exist (yet) or is going: the scheduler does not even try the pod."""
        return [e for e in self.entries if e["status"] in ("missing", "not-created", "deleting")]

    # -- per node ---------------------------------------------------------------------------------

    def fits(self, node_name):
        """True when every claim of the pod can be satisfied on the node."""
        if self.unresolved:
            return False
        for entry in self.entries:
            if entry["status"] == "allocated" and not self.allocated_on(entry["claim"], node_name):
                return False
            if entry["status"] == "pending" and self.verdict(entry["claim"], node_name)[0] is not None:
                return False
        return True

    def allocated_on(self, claim, node_name):
        selector = claim["status"]["allocation"].get("nodeSelector")
        return node_name in self.nodes and node_selector_matches(selector, self.nodes[node_name])

    def verdict(self, claim, node_name):
        """``(cause, detail)`` of the first request of an unallocated claim the node cannot satisfy; ``(None,
        None)`` when it can. Causes: ``class``, ``no-devices``, ``selectors``, ``too-few`` (fewer matching devices than
        the request's count, all free or not), ``taint``, ``allocated``."""
        cache_key = (key_of(claim), node_name)
        if cache_key not in self._cache:
            out = (None, None)
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
                results = [self._alternative(alt, node_name) for alt in _alternatives(request)]
                if results and all(r[0] for r in results):
                    out = results[0][0], dict(results[0][1], request=request.get("name"))
                    break
            self._cache[cache_key] = out
        return self._cache[cache_key]

    def _alternative(self, alt, node_name):
        classes = self.index.classes
        device_class = alt.get("deviceClassName")
        if classes is not None and device_class not in classes:
            return "class", {"device_class": device_class}
        devices = self.index.raw_devices(node_name)
        if not devices:
            return "no-devices", {}
        matching = []
        for key, dev in devices:
            picked = [class_selects(classes[device_class], dev, key[0]) if classes else True]
            picked.append(selectors_select(alt.get("selectors"), dev, key[0]))
            if False not in picked:  # a selector we cannot evaluate counts as a match: never a false "no device"
                matching.append((key, dev))
        if not matching:
            return "selectors", {"device_class": device_class, "selectors": _cel(alt)}
        exact = alt.get("allocationMode") != "All"
        count = int(alt.get("count") or 1)  # ExactCount's default is one device
        if exact and count > len(matching):
            return "too-few", {"device_class": device_class, "need": count, "matching": len(matching)}
        tolerations = alt.get("tolerations") or []
        usable = [
            (k, d) for k, d in matching if not [t for t in blocking(taints_of(d)) if not _tolerated(t, tolerations)]
        ]
        if not usable or (exact and count > len(usable)):
            tainted = {
                "%s/%s" % (node_name, d.get("name")): [taint_text(t) for t in blocking(taints_of(d))]
                for _k, d in matching
            }
            return "taint", {"tainted": tainted}
        holders = {}
        for key, dev in usable:
            exclusive = [h for h in self.index.holders_of(key, dev) if not h["admin_access"]]
            if exclusive and not alt.get("adminAccess"):
                holders["%s/%s" % (node_name, dev.get("name"))] = exclusive
        free = len(usable) - len(holders)
        need = count if exact else len(usable)
        if free < need:
            return "allocated", {"need": need, "free": free, "matching": len(matching), "holders": holders}
        return None, None

    def offered(self, node_name):
        """What a node publishes, for the evidence: device count by product and MIG profile."""
        out = {}
        for _key, dev in self.index.raw_devices(node_name):
            label = " ".join(v for v in (device_value(dev, "productName"), device_value(dev, "profile")) if v)
            out[label or dev.get("name")] = out.get(label or dev.get("name"), 0) + 1
        return out


def _tolerated(taint, tolerations):
    return any(tolerates(t, taint) for t in tolerations)


def _cel(alt):
    return [(s.get("cel") or {}).get("expression") for s in alt.get("selectors") or []]
