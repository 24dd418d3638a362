# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The operator's CRDs: what applying the target chart's CRDs changes (fields added or removed per CRD version),
whether a live CRD belongs to another owner, and the reads and writes of CRDs (server-side apply before any helm
install or upgrade, delete on request)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import (
    annotations_of,
    labels_of,
    meta_of,
    name_of,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError

FIELD_MANAGER = "gpuops-gpu-operator"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: CRDs the GPU Operator chart ships (reference §4, §8); without ``chart_ref``, ``remove_crds`` deletes these.
OPERATOR_CRDS = (
    "clusterpolicies.nvidia.com",
    "nvidiadrivers.nvidia.com",
    "gpuclusters.nvidia.com",
)
#: Field managers that stand for this release on a CRD: the module's server-side apply, helm's ``crds/`` install.
OWN_MANAGERS = (FIELD_MANAGER, "helm")


def schema_fields(schema, prefix=""):
    """Dotted field paths of an openAPIV3Schema (``spec.driver.version``...), arrays as ``[]``."""
    out = set()
    if not isinstance(schema, dict):
        return out
    for name, sub in (schema.get("properties") or {}).items():
        path = prefix + name
        out.add(path)
        out |= schema_fields(sub, path + ".")
    items = schema.get("items")
    if isinstance(items, dict):
        out |= schema_fields(items, prefix.rstrip(".") + "[].")
    return out


def _version_fields(crd):
    return {
        v.get("name"): schema_fields(((v.get("schema") or {}).get("openAPIV3Schema")) or {})
        for v in (crd.get("spec") or {}).get("versions") or []
    }


def _comparable(crd):
    spec = copy.deepcopy(crd.get("spec") or {})
    if (spec.get("conversion") or {}).get("strategy") == "None":
        spec.pop("conversion")  # the server's default, absent from chart files
    return json.loads(json.dumps(spec, sort_keys=True))


def crd_changes(target_crds, live_by_name):
    """Per target CRD: ``action`` (``create``/``update``/``none``) and the fields added or removed per version."""
    changes = []
    for crd in target_crds:
        name = name_of(crd)
        live = live_by_name.get(name)
        if live is None:
            changes.append({"name": name, "action": "create", "fields_added": [], "fields_removed": []})
            continue
        added, removed = [], []
        want, have = _version_fields(crd), _version_fields(live)
        for version, fields in sorted(want.items()):
            old = have.get(version, set())
            added += ["%s:%s" % (version, f) for f in sorted(fields - old)]
            removed += ["%s:%s" % (version, f) for f in sorted(old - fields)]
        same = not added and not removed and _spec_subset(_comparable(crd), _comparable(live))
        changes.append(
            {"name": name, "action": "none" if same else "update", "fields_added": added, "fields_removed": removed}
        )
    return changes


def _spec_subset(want, have):
    """True when every key in ``want`` has the same value in ``have`` (the server adds defaults)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _spec_subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(_spec_subset(a, b) for a, b in zip(want, have))
    return want == have


def lost_fields(changes):
    """``{CRD name: [fields]}`` that applying the target CRDs would remove from the live ones."""
    return {c["name"]: c["fields_removed"] for c in changes if c["fields_removed"]}


def other_owner(crd, release, namespace):
    """Why the live ``crd`` belongs to another owner than the release ``namespace/release``, or None: another Helm
    release's annotations, an ``app.kubernetes.io/managed-by`` label other than Helm, or ``spec`` fields held by a
    field manager other than :data:`OWN_MANAGERS`."""
    ann = annotations_of(crd)
    owner = (ann.get("meta.helm.sh/release-namespace"), ann.get("meta.helm.sh/release-name"))
    if owner[1] and owner != (namespace, release):
        return "part of Helm release %s/%s" % owner
    managed_by = labels_of(crd).get("app.kubernetes.io/managed-by")
    if managed_by and managed_by.lower() != "helm":
        return "app.kubernetes.io/managed-by=%s" % managed_by
    managers = sorted(
        {
            str(entry.get("manager"))
            for entry in meta_of(crd).get("managedFields") or []
            if not entry.get("subresource")
            and "f:spec" in (entry.get("fieldsV1") or {})
            and entry.get("manager") not in OWN_MANAGERS
        }
    )
    return "spec fields managed by %s" % ", ".join(managers) if managers else None


def live_crds(kube, names):
    """``{name: CRD}`` of those of ``names`` that exist on the cluster (one GET each)."""
    out = {}
    for name in names:
        obj = kube.get_or_none("%s/%s" % (CRD_PATH, name), what="read CRD %s" % name)
        if obj is not None:
            out[name] = obj
    return out


def apply_crds(kube, crds):
    """Server-side apply each of ``crds`` (forced, as :data:`FIELD_MANAGER`); returns the names applied."""
    applied = []
    for crd in crds:
        name = name_of(crd)
        body = {k: v for k, v in crd.items() if k in ("apiVersion", "kind", "metadata", "spec")}
        body["metadata"] = {k: v for k, v in meta_of(crd).items() if k in ("name", "labels", "annotations")}
        try:
            kube.server_side_apply(
                "%s/%s" % (CRD_PATH, name), body, FIELD_MANAGER, force=True, what="apply CRD %s" % name
            )
        except K8sError as exc:
            raise ReleaseError(
                "applying CRD %s (server-side, before the helm upgrade) failed: %s" % (name, exc.msg)
            ) from exc
        applied.append(name)
    return applied


def delete_crds(kube, names):
    """Delete the CRDs ``names`` (after the release is gone)."""
    for name in names:
        try:
            kube.delete_path("%s/%s" % (CRD_PATH, name), what="delete CRD %s" % name)
        except K8sError as exc:
            raise ReleaseError("the release was removed but deleting CRD %s failed: %s" % (name, exc.msg)) from exc
