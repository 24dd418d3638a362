# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU triage, ``quota`` layer: what admission rejects when a controller creates GPU pods (ResourceQuota,
LimitRange, a missing PriorityClass), GPU quotas that are used up, and the namespace's GPU LimitRanges (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import meta_of, name_of, to_int
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.common import (
    event_evidence,
    finding,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.triage.sched import is_gpu_resource

_QUOTA_RE = re.compile(r"exceeded quota: ([^,]+), requested: (.*?), used: (.*?), limited: (.*?)$")


def owner_uids(obj):
    """The uids of ``obj``'s owners."""
    return {r.get("uid") for r in meta_of(obj).get("ownerReferences") or [] if r.get("uid")}


def create_failures(events, owners=None):
    """Findings for ``FailedCreate`` events of controllers: ResourceQuota, LimitRange and PriorityClass rejections.

    Only events naming a GPU resource or a PriorityClass count. ``owners`` (uids) limits them to those owners.
    """
    latest = {}
    for event in events:
        if event.get("reason") != "FailedCreate":
            continue
        obj = event.get("involvedObject") or {}
        if owners is not None and obj.get("uid") not in owners:
            continue
        message = event.get("message") or ""
        if "nvidia.com/" not in message and "PriorityClass" not in message:
            continue
        key = (obj.get("kind"), obj.get("name"), "quota" if "quota" in message else message[:80])
        if key not in latest or event_evidence(event)["last_seen"] >= event_evidence(latest[key])["last_seen"]:
            latest[key] = event
    out = []
    for (kind, name, _unused), event in sorted(latest.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        item = _create_failure(kind, name, event)
        if item:
            out.append(item)
    return out


def _create_failure(kind, name, event):
    """The finding for one controller's newest ``FailedCreate`` event, or None for another rejection."""
    message = event.get("message") or ""
    obj = event.get("involvedObject") or {}
    subject = "%s %s/%s" % (kind, obj.get("namespace"), name)
    ev = {"event": event_evidence(event), "object": subject}
    rejection = "%s cannot create pods: %s" % (subject, message.split("forbidden: ")[-1])
    if "exceeded quota" in message:
        match = _QUOTA_RE.search(message.rstrip())
        if match:
            ev.update(quota=match.group(1), requested=match.group(2), used=match.group(3), limited=match.group(4))
        return finding(
            "quota",
            "QuotaExceeded",
            "error",
            "%s cannot create pods: ResourceQuota %s would be exceeded (requested %s, used %s, hard %s)"
            % (subject, ev.get("quota"), ev.get("requested"), ev.get("used"), ev.get("limited")),
            "Lower the GPU request, wait for GPU pods in the namespace to finish, or raise the quota's "
            "requests.nvidia.com/gpu.",
            ev,
        )
    if "must specify" in message:
        return finding(
            "quota",
            "QuotaRequiresRequests",
            "error",
            rejection,
            "Set the resource in every container's requests/limits, or add a LimitRange default.",
            ev,
        )
    if "PriorityClass" in message:
        return finding(
            "preemption",
            "PriorityClassNotFound",
            "error",
            rejection,
            "Create the PriorityClass or fix priorityClassName in the pod template.",
            ev,
        )
    if "per Container" in message or "per Pod" in message or "LimitRange" in message:
        return finding(
            "quota",
            "LimitRangeViolation",
            "error",
            rejection,
            "Request no more (or less) than the namespace's LimitRange allows for nvidia.com/gpu, or change "
            "the LimitRange.",
            ev,
        )
    return None


def quota_pressure(quotas):
    """Warnings for ResourceQuotas whose GPU entries are used up (another GPU would be rejected)."""
    out = []
    for quota in quotas:
        status = quota.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        for key, limit in sorted(hard.items()):
            resource = key[len("requests.") :] if key.startswith("requests.") else key
            if not is_gpu_resource(resource):
                continue
            if to_int(used.get(key)) >= to_int(limit):
                out.append(
                    finding(
                        "quota",
                        "QuotaFull",
                        "warning",
                        "ResourceQuota %s: %s used %s of %s; another 1 would be rejected"
                        % (name_of(quota), key, used.get(key, 0), limit),
                        "Wait for GPU pods in the namespace to finish or raise the quota.",
                        {"quota": name_of(quota), "resource": key, "hard": limit, "used": used.get(key, "0")},
                    )
                )
    return out


def limit_range_evidence(limit_ranges):
    """The GPU entries (``max``, ``min``, ``default``, ...) of the namespace's LimitRanges."""
    out = []
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            picked = {}
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                values = {k: v for k, v in (item.get(field) or {}).items() if is_gpu_resource(k)}
                if values:
                    picked[field] = values
            if picked:
                picked.update(limit_range=name_of(lr), type=item.get("type"))
                out.append(picked)
    return out
