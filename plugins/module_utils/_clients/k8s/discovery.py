# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""API discovery: every resource the API server serves, with its kind and scope (no RBAC needed).

Aggregated discovery (``apidiscovery.k8s.io/v2``, GA in Kubernetes 1.30) answers for every group in two requests
(``/api`` and ``/apis``); a server that does not offer it answers with the legacy documents, and then each group
version is read on its own (``/api/v1``, ``/apis/<group>/<version>``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported, this only keeps sanity's compile test quiet
    from urllib import quote  # type: ignore

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def _resource(group_version, plural, kind, namespaced):
    return {"group_version": group_version, "resource": plural, "kind": kind, "namespaced": bool(namespaced)}


def _from_aggregated(doc):
    out = []
    for group in doc.get("items") or []:
        name = (group.get("metadata") or {}).get("name") or ""
        for version in group.get("versions") or []:
            gv = "%s/%s" % (name, version.get("version")) if name else version.get("version")
            for res in version.get("resources") or []:
                kind = (res.get("responseKind") or {}).get("kind")
                if kind:
                    out.append(_resource(gv, res.get("resource"), kind, res.get("scope") == "Namespaced"))
    return out


def _from_legacy(client, group_versions):
    out = []
    for gv in group_versions:
        path = "/api/%s" % gv if "/" not in gv else "/apis/%s" % gv
        doc = client.get(path, what="discover %s" % gv)
        for res in doc.get("resources") or []:
            if "/" not in (res.get("name") or "/"):  # subresources (pods/log, .../status) are no kinds of their own
                out.append(_resource(gv, res["name"], res.get("kind"), res.get("namespaced")))
    return out


def api_resources(client):
    """``[{group_version, resource, kind, namespaced}]`` of every resource the API server serves (``group_version``
    is ``v1`` for the core group, ``<group>/<version>`` otherwise)."""
    core = client.get("/api", what="discover the core API", accept=AGGREGATED)
    groups = client.get("/apis", what="discover the API groups", accept=AGGREGATED)
    if core.get("kind") == "APIGroupDiscoveryList" and groups.get("kind") == "APIGroupDiscoveryList":
        return _from_aggregated(core) + _from_aggregated(groups)
    versions = list(core.get("versions") or [])
    for group in groups.get("groups") or []:
        versions += [v.get("groupVersion") for v in group.get("versions") or [] if v.get("groupVersion")]
    return _from_legacy(client, versions)


def helm_api_versions(resources):
    """What ``helm install`` puts in ``.Capabilities.APIVersions`` for these resources: each ``group/version`` and
    each ``group/version/Kind``, sorted (for ``helm template --api-versions``)."""
    out = set()
    for res in resources:
        out.add(res["group_version"])
        out.add("%s/%s" % (res["group_version"], res["kind"]))
    return sorted(out)


def object_path(resources, api_version, kind, name, namespace=None):
    """The URL path of one object (``apiVersion``, ``kind``, name, namespace as a manifest gives them), or None
    when the API server serves no such kind."""
    for res in resources:
        if res["group_version"] == api_version and res["kind"] == kind:
            root = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
            ns = "/namespaces/%s" % quote(namespace, safe="") if res["namespaced"] and namespace else ""
            return "%s%s/%s/%s" % (root, ns, res["resource"], quote(name, safe=""))
    return None
