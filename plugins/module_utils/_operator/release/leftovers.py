# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""After a failed ``helm uninstall``: what it already deleted (then the run changed the cluster) and what remains.

Helm deletes a release in steps (pre-delete hooks, the release's objects, post-delete hooks, the release record), so a
failure in a later step (a hook Job that cannot be created, say) leaves a cluster where most of the release is gone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import object_path
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import meta_of, name_of
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.errors import ReleaseError


def _objects(text, namespace, hook):
    out = []
    for doc in yaml.safe_load_all(text or ""):
        if isinstance(doc, dict) and doc.get("kind") and doc.get("apiVersion") and name_of(doc):
            ns = meta_of(doc).get("namespace") or namespace
            out.append(
                {
                    "api_version": doc["apiVersion"],
                    "kind": doc["kind"],
                    "namespace": ns,
                    "name": name_of(doc),
                    "hook": hook,
                }
            )
    return out


def release_objects(helm, name, namespace):
    """``[{api_version, kind, namespace, name, hook}]`` of the release's manifest and of its hooks (read before the
    uninstall; ``namespace`` is where a namespaced object lives)."""
    return _objects(helm.get_manifest(name, namespace), namespace, False) + _objects(
        helm.get_hooks(name, namespace), namespace, True
    )


def remaining(kube, resources, objects):
    """The ``objects`` still in the cluster, as ``Kind namespace/name`` (``Kind name`` when cluster-scoped); an object
    whose kind the API server no longer serves cannot remain."""
    left = []
    for obj in objects:
        path = object_path(resources, obj["api_version"], obj["kind"], obj["name"], obj["namespace"])
        if path and kube.get_or_none(path, what="read %s %s" % (obj["kind"], obj["name"])) is not None:
            where = "%s/" % obj["namespace"] if "/namespaces/" in path else ""
            left.append(dict(obj, text="%s %s%s" % (obj["kind"], where, obj["name"])))
    return left


def uninstall_failed(exc, objects, left, before, after, result):
    """Raise the ReleaseError of a failed uninstall: ``changed`` when helm deleted anything (an object of the release,
    or its record changed), the objects that remain, and helm's message. ``objects``: :func:`release_objects`;
    ``left``: those :func:`remaining`; ``before``/``after``: the release (``helm get metadata``) before and after the
    uninstall (None: gone)."""
    kept = {(o["kind"], o["namespace"], o["name"]) for o in left}
    deleted = [o for o in objects if not o["hook"] and (o["kind"], o["namespace"], o["name"]) not in kept]
    moved = after is None or (after.get("status"), after.get("revision")) != (before["status"], before["revision"])
    changed = bool(deleted) or moved
    if after is None:
        state = "the release record is gone, so delete what remains yourself"
    else:
        state = "the release is %s (revision %s): fix the cause and run the uninstall again" % (
            after.get("status"),
            after.get("revision"),
        )
    raise ReleaseError(
        "helm uninstall failed after deleting %d of the release's %d object(s); still in the cluster: %s; %s: %s"
        % (
            len(deleted),
            len([o for o in objects if not o["hook"]]),
            ", ".join(o["text"] for o in left) or "nothing",
            state,
            exc.msg,
        ),
        **dict(result, changed=changed, remaining=[o["text"] for o in left], release=after, helm_error=exc.msg),
    )
