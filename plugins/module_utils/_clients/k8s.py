# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Kubernetes API access shared by the collection's modules.

One place for:

* building the client configuration from a kubeconfig file (or dict), a context, or the in-cluster
  service account (:func:`load_configuration`, :func:`build_api_client`, :func:`client_from_params`);
* GET requests that return parsed JSON without the kubernetes model deserialisation (much faster for
  big LISTs), retried with exponential backoff and full jitter on 429, 5xx and connection errors,
  honouring ``Retry-After``, with a bounded number of attempts (:class:`K8sClient`, :class:`RetryPolicy`);
* paginated LISTs (``limit``/``continue``) of core and custom resources (:meth:`K8sClient.list_all`,
  :meth:`K8sClient.list_core`, :meth:`K8sClient.list_custom`), with every HTTP request counted in
  :attr:`K8sClient.requests`;
* errors turned into messages that name the input and the fix (:class:`K8sError`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import random
import ssl
import time
import traceback

try:
    from urllib.parse import quote, urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported, this only keeps sanity's compile test quiet
    from urllib import quote, urlencode  # type: ignore

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

    class ConfigException(Exception):  # type: ignore
        pass


from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import Requirement

#: The kubernetes Python library, for ``run_module(requirements=...)``.
KUBERNETES = Requirement("kubernetes", HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR)

#: HTTP statuses that are retried: throttling and server-side failures.
RETRY_STATUSES = frozenset((429, 500, 502, 503, 504))

#: Environment variables read, in this order, when no kubeconfig is given (kubernetes.core uses the first).
KUBECONFIG_ENV = ("K8S_AUTH_KUBECONFIG", "KUBECONFIG")


class K8sError(GpuOpsError):
    """A failure talking to Kubernetes, with a message that says what to fix.

    ``status`` is the HTTP status (0 when no response came back); ``details`` is a dict safe to return
    from a module (no secrets).
    """

    def __init__(self, msg, status=0, details=None):
        super().__init__(msg, status=status, details=details)


# --------------------------------------------------------------------------------------------------
# Configuration


def default_kubeconfig_path():
    """The kubeconfig used when none is given: ``$K8S_AUTH_KUBECONFIG``, ``$KUBECONFIG`` (first entry), else
    ``~/.kube/config``."""
    for name in KUBECONFIG_ENV:
        value = os.environ.get(name)
        if value:
            return os.path.expanduser(value.split(os.pathsep)[0])
    return os.path.expanduser("~/.kube/config")


def _in_cluster_available():
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )


def _contexts_of(config_dict):
    return [c.get("name") for c in (config_dict.get("contexts") or []) if isinstance(c, dict)]


def _read_kubeconfig(path):
    """Parse ``path`` as YAML and return the dict, or raise K8sError naming the file."""
    import yaml  # a kubernetes dependency; imported late so that this file imports without it

    try:
        with open(path, "rb") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise K8sError(
            "kubeconfig %r could not be read (%s). Set the kubeconfig option (or K8S_AUTH_KUBECONFIG/KUBECONFIG) "
            "to a readable kubeconfig file." % (path, exc.strerror or exc)
        ) from exc
    except yaml.YAMLError as exc:
        raise K8sError(
            "kubeconfig %r is not valid YAML (%s). Point kubeconfig at a valid kubeconfig file." % (path, exc)
        ) from exc
    if not isinstance(data, dict):
        raise K8sError(
            "kubeconfig %r is not a kubeconfig (expected a mapping with clusters, users and contexts)." % path
        )
    return data


def load_configuration(kubeconfig=None, context=None, in_cluster=None, validate_certs=None, host=None, api_key=None):
    """Return a ``kubernetes.client.Configuration`` for the given inputs.

    ``kubeconfig`` is a path or an already-parsed dict. Without it the default kubeconfig is used when it
    exists, otherwise the in-cluster service account (``in_cluster=None`` means "when available";
    ``True`` forces it, ``False`` forbids it). ``context`` picks a kubeconfig context; an unknown one is an
    error that lists the available contexts. ``host``/``api_key``/``validate_certs`` override the result.
    """
    if not HAS_KUBERNETES:
        raise K8sError(missing_required_lib("kubernetes"))
    cfg = k8s_client.Configuration()
    source = None
    if in_cluster is True:
        source = "in-cluster"
    elif kubeconfig is None:
        path = default_kubeconfig_path()
        if os.path.exists(path):
            kubeconfig = path
        elif in_cluster is not False and _in_cluster_available():
            source = "in-cluster"
        elif host is None:
            raise K8sError(
                "no kubeconfig found at %r and not running inside a cluster. Set the kubeconfig option "
                "(or K8S_AUTH_KUBECONFIG/KUBECONFIG) to a kubeconfig file." % path
            )
    if source == "in-cluster":
        try:
            k8s_config.load_incluster_config(client_configuration=cfg)
        except ConfigException as exc:
            raise K8sError(
                "in-cluster configuration failed (%s). Run inside a pod with a service account token, or set the "
                "kubeconfig option." % exc
            ) from exc
    elif kubeconfig is not None:
        if isinstance(kubeconfig, dict):
            data, label = kubeconfig, "(inline kubeconfig)"
        else:
            label = os.path.expanduser(str(kubeconfig))
            data = _read_kubeconfig(label)
        names = _contexts_of(data)
        if context is not None and context not in names:
            raise K8sError(
                "context %r is not in kubeconfig %s (available: %s). Set context to one of those, or omit it to use "
                "current-context." % (context, label, ", ".join(sorted(n for n in names if n)) or "none")
            )
        if context is None and not data.get("current-context"):
            raise K8sError(
                "kubeconfig %s has no current-context. Set the context option (available: %s)."
                % (label, ", ".join(sorted(n for n in names if n)) or "none")
            )
        try:
            if isinstance(kubeconfig, dict):
                k8s_config.load_kube_config_from_dict(
                    config_dict=data, context=context, client_configuration=cfg, persist_config=False
                )
            else:  # from the file, so that relative certificate paths resolve against its directory
                k8s_config.load_kube_config(
                    config_file=label, context=context, client_configuration=cfg, persist_config=False
                )
        except (ConfigException, ValueError, TypeError, KeyError) as exc:
            raise K8sError(
                "kubeconfig %s (context %r) could not be used: %s. Fix that entry of the kubeconfig or pick "
                "another context." % (label, context or data.get("current-context"), exc)
            ) from exc
    if host:
        cfg.host = host
    if api_key:
        cfg.api_key = {"authorization": "Bearer %s" % api_key}
    if validate_certs is not None:
        cfg.verify_ssl = bool(validate_certs)
    return cfg


def build_api_client(kubeconfig=None, context=None, in_cluster=None, **kwargs):
    """A ``kubernetes.client.ApiClient`` for code that wants the typed APIs (slower for big LISTs)."""
    return k8s_client.ApiClient(
        load_configuration(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, **kwargs)
    )


# --------------------------------------------------------------------------------------------------
# Retries


class RetryPolicy:
    """Bounded retries: ``attempts`` tries in all, delays ``base * 2**n`` capped at ``max_delay`` with full jitter.

    A ``Retry-After`` header (seconds) is honoured, capped at ``max_delay``. ``sleep``/``rand`` are injectable
    so tests run instantly and deterministically.
    """

    def __init__(self, attempts=5, base_delay=0.25, max_delay=8.0, sleep=time.sleep, rand=random.random):
        self.attempts = max(1, int(attempts))
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self.sleep = sleep
        self.rand = rand

    def delay(self, attempt, retry_after=None):
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_delay)
            except (TypeError, ValueError):
                pass  # an HTTP date or garbage: fall back to backoff
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return ceiling * self.rand()


# --------------------------------------------------------------------------------------------------
# The raw JSON client


def _status_message(status, body):
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("message"):
            return parsed["message"]
    except (ValueError, TypeError):
        pass
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    return text.strip()[:300]


class K8sClient:
    """GETs against the API server returning parsed JSON; counts requests in ``self.requests``.

    Built from a ``kubernetes.client.Configuration`` (see :func:`load_configuration`). Uses urllib3 directly with
    the configuration's TLS and auth settings, so big LISTs skip the kubernetes model layer entirely.
    """

    def __init__(self, configuration, timeout=30, retry=None, pool_manager=None):
        self.configuration = configuration
        self.host = (configuration.host or "").rstrip("/")
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.requests = 0
        self._pool = pool_manager or self._make_pool(configuration)

    @staticmethod
    def _make_pool(cfg):
        kwargs = {"num_pools": 4, "maxsize": 4, "retries": False}
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

    def get(self, path, query=None, what=None):
        """GET ``path`` and return the decoded JSON; raise K8sError after the retries are spent.

        ``what`` names the request in error messages (e.g. ``"list nodes"``).
        """
        return self.send("GET", path, query=query, what=what or "GET %s" % path)

    def _status_error(self, resp, what):
        status = resp.status
        detail = _status_message(status, resp.data)
        if status == 401:
            hint = "the credentials in the kubeconfig were rejected; refresh the token or client certificate"
        elif status == 403:
            hint = "grant this user RBAC permission to %s" % what
        elif status == 404:
            hint = "the resource or API group does not exist on this cluster"
        elif status == 410:
            hint = "the list continue token expired; retry"
        elif status == 429:
            hint = "the API server is throttling requests; retry later or lower the request rate"
        else:
            hint = "the API server failed; check its health"
        return K8sError("%s failed: HTTP %d %s: %s (%s)." % (what, status, resp.reason or "", detail, hint), status)

    # -- LIST helpers ---------------------------------------------------------------------------

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
                        return items, meta
            except K8sError as exc:
                if exc.status == 410 and token and not restarted:
                    restarted = True
                    continue
                raise

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

    # -- writes (added for gpu_operator) --------------------------------------------------------------

    def send_typed(
        self, method, path, body=None, query=None, content_type="application/json", what=None, ok_statuses=()
    ):
        """Like ``send`` but with an explicit ``Content-Type`` (server-side apply needs
        ``application/apply-patch+yaml``); returns the decoded JSON response.

        Retried like :meth:`get` on 429/5xx and connection errors (only use it for idempotent requests such
        as server-side apply or DELETE). A status in ``ok_statuses`` returns ``None``.
        """
        return self.send(
            method, path, query=query, body=body, what=what, accept_statuses=ok_statuses, content_type=content_type
        )

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
        return self.send_typed("DELETE", path, what=what, ok_statuses=(404,)) is not None

    # -- writes and non-JSON reads (added for gpu_smoke_test) ----------------------------------

    def send(self, method, path, query=None, body=None, what=None, raw=False, accept_statuses=(), content_type=None):
        """One request of any verb, retried like :meth:`get`; returns decoded JSON (or bytes with ``raw``).

        A status in ``accept_statuses`` (e.g. 404 for a DELETE of something already gone, 409 for a CREATE
        that a retried request already made) returns ``None`` instead of raising.
        """
        what = what or "%s %s" % (method, path)
        url = self.url(path, query)
        payload = None if body is None else json.dumps(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            self.requests += 1
            retry_after = None
            headers = self._headers()
            if payload is not None:
                headers["Content-Type"] = content_type or "application/json"
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
                    if raw:
                        return resp.data
                    try:
                        return json.loads(resp.data) if resp.data else {}
                    except ValueError as exc:
                        raise K8sError(
                            "the API server returned invalid JSON for %s: %s" % (what, exc), resp.status
                        ) from exc
                if resp.status in accept_statuses:
                    return None
                failure = self._status_error(resp, what)
                if resp.status not in RETRY_STATUSES:
                    raise failure
                retry_after = resp.headers.get("Retry-After")
            if attempt >= self.retry.attempts:
                raise failure
            self.retry.sleep(self.retry.delay(attempt, retry_after))

    def create_pod(self, namespace, body):
        """CREATE a pod; returns the created object (``None`` if a retried request had already made it)."""
        path = "/api/v1/namespaces/%s/pods" % quote(namespace, safe="")
        name = (body.get("metadata") or {}).get("name")
        return self.send("POST", path, body=body, what="create pod %s/%s" % (namespace, name), accept_statuses=(409,))

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


def client_from_params(params, retry=None):
    """A :class:`K8sClient` from module params (keys of the kubeconfig fragment; unknown keys ignored)."""
    cfg = load_configuration(
        kubeconfig=params.get("kubeconfig"),
        context=params.get("context"),
        in_cluster=params.get("in_cluster"),
        validate_certs=params.get("validate_certs"),
        host=params.get("host"),
        api_key=params.get("api_key"),
    )
    return K8sClient(cfg, timeout=params.get("api_timeout") or 30, retry=retry)


# --------------------------------------------------------------------------------------------------
# Module glue: what every cluster module does around its own logic


def module_client(module, retry=None):
    """The :class:`K8sClient` for ``module``'s kubeconfig options (the kubeconfig fragment).

    The module runner (``_core.module.GpuOpsModule``) has already marked an inline kubeconfig's secrets no_log.
    """
    return client_from_params(module.params, retry=retry)
