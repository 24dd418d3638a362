"""Shared harness for the module specifications in this directory: run a module's main() with its arguments,
capture exit_json/fail_json, and (for cluster modules) hand it a K8sClient whose HTTP pool is an in-memory stub.

A stub API server is any object with ``request(method, url, ...)`` returning :class:`Resp`; :func:`page` answers
a LIST the way the API server paginates (limit/continue).

Imported by the test files as ``module_harness`` (pytest puts this directory on sys.path: there is no __init__.py).
"""

from __future__ import annotations

import json

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
