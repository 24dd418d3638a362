# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""One request to the API server: urllib3 with the configuration's TLS and auth settings, parsed JSON back
(no kubernetes model layer), bounded retries, every request counted."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import ssl
import threading
from collections import namedtuple

try:
    from urllib.parse import urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported, this only keeps sanity's compile test quiet
    from urllib import urlencode  # type: ignore

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.errors import K8sError, status_error
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.library import urllib3
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s.retry import (
    RETRY_STATUSES,
    RetryPolicy,
)

#: How :meth:`Transport.send` answers: ``raw`` returns the body's bytes, not decoded JSON; a status in
#: ``accept_statuses`` returns None instead of raising; ``headers`` are added to (or replace) the default ones.
SendOptions = namedtuple("SendOptions", "raw accept_statuses headers", defaults=(False, (), None))


class Transport:
    """Requests against the API server returning parsed JSON; counts requests in ``self.requests``.

    Built from a ``kubernetes.client.Configuration`` (see :func:`.config.load_configuration`); ``pool_manager``
    replaces the urllib3 pool (tests pass an in-memory one).
    """

    def __init__(self, configuration, timeout=30, retry=None, pool_manager=None):
        self.configuration = configuration
        self.host = (configuration.host or "").rstrip("/")
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.requests = 0
        self._counting = threading.Lock()
        self._pool = pool_manager or self._make_pool(configuration)

    def count_request(self):
        """Count one request in ``requests`` (safe from several threads: the canary writes to nodes concurrently)."""
        with self._counting:
            self.requests += 1

    @staticmethod
    def _make_pool(cfg):
        # up to 16 connections per server: the canary writes 16 nodes at once (``canary.session.WRITERS``)
        kwargs = {"num_pools": 4, "maxsize": 16, "retries": False}
        if cfg.verify_ssl:
            kwargs["cert_reqs"] = ssl.CERT_REQUIRED
            if cfg.ssl_ca_cert:
                kwargs["ca_certs"] = cfg.ssl_ca_cert
            else:
                try:
                    import certifi

                    kwargs["ca_certs"] = certifi.where()
                except ImportError:
                    pass
        else:
            kwargs["cert_reqs"] = ssl.CERT_NONE
            urllib3.disable_warnings()
        if cfg.cert_file:
            kwargs["cert_file"] = cfg.cert_file
        if cfg.key_file:
            kwargs["key_file"] = cfg.key_file
        if getattr(cfg, "assert_hostname", None) is not None:
            kwargs["assert_hostname"] = cfg.assert_hostname
        if getattr(cfg, "tls_server_name", None):
            kwargs["server_hostname"] = cfg.tls_server_name
        if getattr(cfg, "proxy", None):
            return urllib3.ProxyManager(cfg.proxy, proxy_headers=getattr(cfg, "proxy_headers", None), **kwargs)
        return urllib3.PoolManager(**kwargs)

    def _headers(self):
        cfg = self.configuration
        hook = getattr(cfg, "refresh_api_key_hook", None)
        if hook is not None:
            hook(cfg)  # exec plugins / expiring tokens refresh here
        headers = {"Accept": "application/json", "User-Agent": "gpuops.gpu_operator"}
        for setting in (cfg.auth_settings() or {}).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def url(self, path, query=None):
        query = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        return self.host + path + ("?" + urlencode(sorted(query.items())) if query else "")

    def get(self, path, query=None, what=None, accept=None):
        """GET ``path`` and return the decoded JSON; raise K8sError after the retries are spent.

        ``what`` names the request in error messages (e.g. ``"list nodes"``); ``accept`` replaces the ``Accept``
        header (for example to ask for aggregated API discovery).
        """
        headers = {"Accept": accept} if accept else None
        return self.send("GET", path, query=query, what=what or "GET %s" % path, headers=headers)

    def send(self, method, path, query=None, body=None, what=None, **options):
        """One request of any verb, retried like :meth:`get`; returns decoded JSON.

        ``options`` are those of :data:`SendOptions`: ``raw`` for the bytes; ``accept_statuses`` (e.g. 404 for a
        DELETE of something already gone, 409 for a CREATE that a retried request already made) return ``None``
        instead of raising; ``headers`` such as ``Content-Type`` (server-side apply) or ``Accept``.
        """
        options = SendOptions(**options)
        what = what or "%s %s" % (method, path)
        url = self.url(path, query)
        payload = None if body is None else json.dumps(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            self.count_request()
            retry_after = None
            headers = self._headers()
            if payload is not None:
                headers["Content-Type"] = "application/json"
            headers.update(options.headers or {})
            try:
                resp = self._pool.request(
                    method, url, body=payload, headers=headers, timeout=self.timeout, retries=False
                )
            except urllib3.exceptions.SSLError as exc:
                raise K8sError(
                    "TLS to the API server %s failed for %s: %s. Check the cluster's certificate-authority in the "
                    "kubeconfig (or validate_certs)." % (self.host, what, exc)
                ) from exc
            except urllib3.exceptions.HTTPError as exc:
                failure = K8sError(
                    "cannot reach the Kubernetes API server %s for %s after %d attempt(s): %s. Check that the server "
                    "is up and that the kubeconfig/context points at it." % (self.host, what, attempt, exc)
                )
            else:
                if 200 <= resp.status < 300:
                    if options.raw:
                        return resp.data
                    try:
                        return json.loads(resp.data) if resp.data else {}
                    except ValueError as exc:
                        raise K8sError(
                            "the API server returned invalid JSON for %s: %s" % (what, exc), resp.status
                        ) from exc
                if resp.status in options.accept_statuses:
                    return None
                failure = status_error(resp, what)
                if resp.status not in RETRY_STATUSES:
                    raise failure
                retry_after = resp.headers.get("Retry-After")
            if attempt >= self.retry.attempts:
                raise failure
            self.retry.sleep(self.retry.delay(attempt, retry_after))
