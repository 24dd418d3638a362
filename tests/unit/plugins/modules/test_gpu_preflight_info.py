# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Specification of plugins/modules/gpu_preflight_info.py with a stubbed API server (no cluster)."""

from __future__ import annotations

from urllib.parse import urlsplit

import module_harness as harness
import yaml
from module_harness import Resp

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import (
    KUBECONFIG_ARG_SPEC,
    OPERATOR_NAMES_ARG_SPEC,
)
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_preflight_info as mod


class ReadOnlyServer:
    """Answers GETs only; anything else fails the test (the module must not write)."""

    def __init__(self, bodies):
        self.bodies = bodies

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None):
        assert method == "GET", "gpu_preflight_info must only read"
        path = urlsplit(url).path
        if path == "/version":
            return Resp(200, {"gitVersion": "v1.36.3", "major": "1", "minor": "36"})
        if path in self.bodies:
            return Resp(200, self.bodies[path])
        return Resp(404, {"message": "not found"}, "Not Found")


def run_module(monkeypatch, server, reviews, **args):
    monkeypatch.setattr(mod, "reviewer", lambda cfg: reviews)
    return harness.run_module(mod, monkeypatch, args, server=server)


EMPTY = {"items": [], "metadata": {}}


def test_reads_every_section_and_lists_the_denied_permission(monkeypatch):
    server = ReadOnlyServer({"/api/v1/nodes": EMPTY, "/apis/apps/v1/daemonsets": EMPTY, "/api/v1/pods": EMPTY})
    out = run_module(
        monkeypatch,
        server,
        lambda body: {"allowed": body["spec"]["resourceAttributes"]["verb"] == "list"},
        permissions=[{"verb": "list", "resource": "nodes"}, {"verb": "patch", "resource": "nodes"}],
    )
    assert out["_kind"] == "exit" and out["changed"] is False
    assert out["kubernetes_version"]["git_version"] == "v1.36.3"
    assert out["runtime_class"]["exists"] is False and out["namespace"]["exists"] is False
    assert [m["verb"] for m in out["access"][0]["missing"]] == ["patch"]
    # before an install nothing names the operator namespace: the conventional one, with a problem saying so
    assert out["namespace"]["name"] == out["operator"]["namespace"] == "gpu-operator"
    assert out["operator"]["namespace_source"] == "default" and out["operator"]["problems"]


def test_a_forbidden_read_fails_naming_it(monkeypatch):
    class Forbidden(ReadOnlyServer):
        def request(self, method, url, **kw):
            return Resp(403, {"message": "nodes is forbidden"}, "Forbidden")

    out = run_module(monkeypatch, Forbidden({}), None, sections=["nodes"])
    assert out["_kind"] == "fail" and "403" in out["msg"] and out["status"] == 403


def test_page_size_below_one_is_refused(monkeypatch):
    out = run_module(monkeypatch, ReadOnlyServer({}), None, page_size=0)
    assert out["_kind"] == "fail" and out["msg"].startswith("option page_size: 0 is refused: it is not greater than 0")


def test_the_documented_options_are_the_argument_spec():
    doc = yaml.safe_load(mod.DOCUMENTATION)
    assert set(doc["options"]) | set(KUBECONFIG_ARG_SPEC) | set(OPERATOR_NAMES_ARG_SPEC) == set(mod.argspec())
    assert set(doc["options"]["permissions"]["suboptions"]) == set(mod.argspec()["permissions"]["options"])
