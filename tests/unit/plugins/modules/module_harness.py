"""Shared harness for the module specifications in this directory: run a module's main() with its arguments,
capture exit_json/fail_json, and (for cluster modules) hand it a K8sClient whose HTTP pool is an in-memory stub.

The stub API server is :class:`ReadOnlyApiServer` (any object with ``request(method, url, ...)`` returning
:class:`Resp` will do); :func:`page` answers a LIST the way the API server paginates (limit/continue).

Imported by the test files as ``module_harness`` (pytest puts this directory on sys.path: there is no __init__.py).
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from kubernetes import client as k8s_client

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sClient, RetryPolicy
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import module as k8s_module


class Resp:
    """One HTTP response as urllib3 gives it to the kubernetes client; ``raw`` bodies are sent as given (logs)."""

    def __init__(self, status, body, reason="OK", raw=False):
        self.status, self.headers, self.reason = status, {}, reason
        self.data = body if raw else json.dumps(body).encode()


def page(items, query):
    """A LIST answer: ``limit`` of ``items`` from ``continue`` on, and the next ``continue`` while more remain."""
    start = int(query.get("continue", 0))
    limit = int(query.get("limit", len(items) or 1))
    rest = start + limit
    return Resp(200, {"items": items[start:rest], "metadata": {"continue": str(rest) if rest < len(items) else None}})


#: A LIST of these core resources in a namespace that holds none (or does not exist) is empty, as on an API server.
NAMESPACED_CORE_LIST = re.compile(r"^/api/v1/namespaces/[^/]+/(pods|events|services|resourcequotas|limitranges)$")


def field_value(obj, dotted):
    """The value of a field selector's ``dotted`` path in ``obj`` ("" where absent, as the API server reads it)."""
    for key in dotted.split("."):
        obj = obj.get(key) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


def selected(items, query):
    """``items`` that match the query's ``labelSelector`` (``k=v`` terms) and ``fieldSelector`` (``path=v`` and
    ``path!=v`` terms), each a comma-separated conjunction."""
    for term in filter(None, query.get("labelSelector", "").split(",")):
        key, _eq, value = term.partition("=")
        items = [i for i in items if (i["metadata"].get("labels") or {}).get(key) == value]
    for term in filter(None, query.get("fieldSelector", "").split(",")):
        if "!=" in term:
            path, _ne, value = term.partition("!=")
            items = [i for i in items if field_value(i, path) != value]
        else:
            path, _eq, value = term.partition("=")
            items = [i for i in items if field_value(i, path) == value]
    return items


class ReadOnlyApiServer:
    """The one stub API server of the module specs: GETs answered from memory as a kube-apiserver answers them.

    ``collections`` (``{path: [object]}``) are LISTed (selected by label and field, paginated) and each of their
    objects is also served at ``path/NAME``. ``objects`` are single GETs (a namespace, a Service, a log), each an
    object, a :class:`Resp` or a function of the query giving one. Paths in ``forbidden`` answer 403. A LIST of a
    core resource in a namespace not held is empty; anything else is 404. Every request is recorded as
    ``(path, query)`` in ``requests``, and a write fails the spec: the modules served by it only read.
    """

    def __init__(self, module, collections, objects=None, forbidden=(), version="v1.36.3"):
        self.module, self.collections, self.objects = module, collections, dict(objects or {})
        self.forbidden = set(forbidden)
        major, minor = version.lstrip("v").split(".")[:2]
        self.version = {"gitVersion": version, "major": major, "minor": minor, "platform": "linux/amd64"}
        self.requests = []

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None):
        assert method == "GET", "%s must only read the cluster (it sent %s %s)" % (self.module, method, url)
        parts = urlsplit(url)
        path, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.requests.append((path, query))
        if path == "/version":
            return Resp(200, self.version)
        if path in self.forbidden:
            return Resp(403, {"message": "forbidden"}, "Forbidden")
        if path in self.objects:
            held = self.objects[path]
            if callable(held):
                return held(query)
            return held if isinstance(held, Resp) else Resp(200, held)
        if path in self.collections:
            return page(selected(self.collections[path], query), query)
        if NAMESPACED_CORE_LIST.match(path):
            return page([], query)
        parent, _slash, name = path.rpartition("/")
        if parent in self.collections:
            found = [o for o in self.collections[parent] if o["metadata"]["name"] == name]
            if found:
                return Resp(200, found[0])
            return Resp(404, {"message": "%s %r not found" % (parent.rsplit("/", 1)[1], name)}, "Not Found")
        return Resp(404, {"message": "the server could not find the requested resource"}, "Not Found")

    def paths(self):
        """The path of every request so far, in order."""
        return [path for path, _query in self.requests]


def run_module(module, monkeypatch, args, server=None, check=False):
    """Run ``module.main()`` with ``args``; returns the exit_json/fail_json keywords plus ``_kind`` ("exit" or "fail")
    and ``_no_log`` (the values the module marked no_log).

    With ``server``, ``client_from_params`` (the modules reach it through ``module_client``) returns a client (one
    attempt, no retries) whose requests go to ``server``.
    """
    if server is not None:

        def fake_client(params, retry=None):
            cfg = k8s_client.Configuration()
            cfg.host = "https://api.test"
            return K8sClient(cfg, retry=RetryPolicy(attempts=1), pool_manager=server)

        monkeypatch.setattr(k8s_module, "client_from_params", fake_client)
    outcome = {}

    def capture(kind):
        def _exit(self, **kwargs):
            outcome.update(kwargs, _kind=kind, _no_log=set(self.no_log_values))
            raise SystemExit(0 if kind == "exit" else 1)

        return _exit

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", capture("exit"))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", capture("fail"))
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return outcome
