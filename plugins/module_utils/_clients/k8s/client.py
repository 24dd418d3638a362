# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The Kubernetes API calls the collection makes: paginated LISTs, reads, server-side apply, pods and their logs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported, this only keeps sanity's compile test quiet
    from urllib import quote  # type: ignore

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.errors import K8sError, status_error
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.library import urllib3
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.transport import Transport
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.objects import name_of


class K8sClient(Transport):
    """The API verbs on top of :class:`.transport.Transport` (same constructor); ``requests`` counts every request.

    LISTs follow ``continue`` tokens, so a big LIST is a few pages, never one request per object. ``listed`` maps
    the path of each LIST made to its selectors and ``resourceVersion``, where a :meth:`watch` of it can start.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.listed = {}

    def list_all(self, path, label_selector=None, field_selector=None, page_size=500, what=None):
        """Every item of a LIST, following ``continue`` tokens; returns ``(items, list_metadata)``.

        If a continue token expires mid-list (HTTP 410) the LIST restarts once from the beginning, so
        the result is always one consistent snapshot per resource.
        """
        what = what or "list %s" % path
        restarted = False
        while True:
            items, token, meta = [], None, {}
            try:
                while True:
                    query = {
                        "limit": page_size,
                        "continue": token,
                        "labelSelector": label_selector,
                        "fieldSelector": field_selector,
                    }
                    page = self.get(path, query, what=what)
                    items.extend(page.get("items") or [])
                    meta = page.get("metadata") or {}
                    token = meta.get("continue")
                    if not token:
                        self.listed[path] = {
                            "labelSelector": label_selector,
                            "fieldSelector": field_selector,
                            "resourceVersion": meta.get("resourceVersion"),
                        }
                        return items, meta
            except K8sError as exc:
                if exc.status == 410 and token and not restarted:
                    restarted = True
                    continue
                raise

    def watch(self, path, since, timeout, what=None):
        """The events (``{"type", "object"}``) of a watch on ``path`` from ``since`` (a :attr:`listed` entry: the
        selectors and ``resourceVersion`` of a LIST of it) as they come, for at most ``timeout`` seconds.

        One request, not retried: an error status (410 Gone: the version is too old, LIST again), an ``ERROR``
        event or a dropped connection raises :class:`K8sError`; the caller falls back to a LIST.
        """
        what = what or "watch %s" % path
        seconds = max(1, int(math.ceil(timeout)))
        query = dict(since, watch="1", timeoutSeconds=seconds)
        self.count_request()
        try:
            resp = self._pool.request(
                "GET",
                self.url(path, query),
                headers=self._headers(),
                timeout=urllib3.Timeout(connect=self.timeout, read=seconds + self.timeout),
                retries=False,
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise K8sError("cannot reach the Kubernetes API server %s for %s: %s" % (self.host, what, exc)) from exc
        try:
            if not 200 <= resp.status < 300:
                raise status_error(resp, what)
            for line in resp:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise K8sError("%s failed: %s" % (what, status.get("message")), status.get("code") or 0)
                yield event
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            raise K8sError("%s broke off: %s" % (what, exc)) from exc
        finally:
            resp.close()
            resp.release_conn()

    def list_core(self, resource, namespace=None, **kwargs):
        """LIST a core (``/api/v1``) resource, e.g. ``list_core("pods", namespace="gpu-operator")``; returns items."""
        path = "/api/v1/%s%s" % ("namespaces/%s/" % quote(namespace, safe="") if namespace else "", resource)
        kwargs.setdefault("what", "list %s%s" % (resource, " in namespace %s" % namespace if namespace else ""))
        return self.list_all(path, **kwargs)[0]

    def list_custom(self, group, version, plural, namespace=None, missing_ok=True, **kwargs):
        """LIST a custom resource; returns items, or ``None`` when the CRD is not installed and ``missing_ok``."""
        ns = "namespaces/%s/" % quote(namespace, safe="") if namespace else ""
        path = "/apis/%s/%s/%s%s" % (group, version, ns, plural)
        kwargs.setdefault("what", "list %s.%s" % (plural, group))
        try:
            return self.list_all(path, **kwargs)[0]
        except K8sError as exc:
            if exc.status == 404 and missing_ok:
                return None
            raise

    def version(self):
        """``/version`` as a dict: ``git_version``, ``major``, ``minor``, ``platform``."""
        data = self.get("/version", what="read the server version")
        return {
            "git_version": data.get("gitVersion"),
            "major": data.get("major"),
            "minor": data.get("minor"),
            "platform": data.get("platform"),
        }

    # -- single objects, by path --------------------------------------------------------------------

    def send_typed(self, method, path, body=None, query=None, content_type="application/json", what=None):
        """Like ``send`` but with an explicit ``Content-Type`` (server-side apply needs
        ``application/apply-patch+yaml``); returns the decoded JSON response.

        Retried like :meth:`get` on 429/5xx and connection errors (only use it for idempotent requests such
        as server-side apply or DELETE).
        """
        headers = {"Content-Type": content_type} if body is not None else None
        return self.send(method, path, query=query, body=body, what=what, headers=headers)

    def get_or_none(self, path, what=None):
        """GET ``path``; ``None`` on HTTP 404."""
        try:
            return self.get(path, what=what)
        except K8sError as exc:
            if exc.status == 404:
                return None
            raise

    def server_side_apply(self, path, body, field_manager, force=False, dry_run=False, what=None):
        """Server-side apply ``body`` at ``path`` (the object's URL) as ``field_manager``."""
        query = {
            "fieldManager": field_manager,
            "force": "true" if force else None,
            "dryRun": "All" if dry_run else None,
        }
        return self.send_typed("PATCH", path, body, query=query, content_type="application/apply-patch+yaml", what=what)

    def delete_path(self, path, what=None):
        """DELETE ``path``; returns False when it was already gone (HTTP 404)."""
        return self.send("DELETE", path, what=what, accept_statuses=(404,)) is not None

    # -- pods ----------------------------------------------------------------------------------------

    def create_pod(self, namespace, body):
        """CREATE a pod; returns the created object (``None`` if a retried request had already made it)."""
        path = "/api/v1/namespaces/%s/pods" % quote(namespace, safe="")
        what = "create pod %s/%s" % (namespace, name_of(body))
        return self.send("POST", path, body=body, what=what, accept_statuses=(409,))

    def delete_pod(self, namespace, name, grace_period_seconds=0):
        """DELETE a pod (propagation Background); a pod already gone is not an error. Returns True if deleted."""
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(namespace, safe=""), quote(name, safe=""))
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": grace_period_seconds}
        out = self.send("DELETE", path, body=body, what="delete pod %s/%s" % (namespace, name), accept_statuses=(404,))
        return out is not None

    def pod_log(self, namespace, name, container=None, tail_lines=None, limit_bytes=None):
        """The log of a pod's container as text (``None`` when the pod is gone)."""
        path = "/api/v1/namespaces/%s/pods/%s/log" % (quote(namespace, safe=""), quote(name, safe=""))
        query = {"container": container, "tailLines": tail_lines, "limitBytes": limit_bytes}
        data = self.send(
            "GET",
            path,
            query=query,
            raw=True,
            what="read the log of pod %s/%s" % (namespace, name),
            accept_statuses=(404,),
        )
        return None if data is None else data.decode("utf-8", "replace")
