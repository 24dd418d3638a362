"""Every module, given bad input, fails with a message that names the input and the fix: never a traceback, and
never a secret of an inline kubeconfig in its result, whatever fails and when."""

from __future__ import annotations

import importlib
import json

import module_harness as harness
import pytest
import urllib3

#: Every module, with the smallest arguments that get it past its own argument checks.
MODULES = {
    "gpu_audit_report": {"dest": "/nonexistent-gpuops/reports", "hosts": {}, "clusters": {}},
    "gpu_canary_upgrade": {"driver_version": "580.105.08"},
    "gpu_cluster_info": {},
    "gpu_host_facts": {},
    "gpu_operator": {"chart_ref": "gpu-operator", "chart_repo_url": "http://charts.invalid"},
    "gpu_preflight_info": {},
    "gpu_smoke_test": {},
    "gpu_triage_info": {"namespace": "default"},
    "gpu_validate_report": {"hosts": {}, "dest": "/nonexistent-gpuops/reports"},
    "nvidia_gpu_facts": {},
}
CLUSTER_MODULES = sorted(m for m in MODULES if m.startswith("gpu_") and m not in ("gpu_audit_report", "gpu_host_facts"))

#: One option of each module given a value of the wrong type, and the type the message must name.
WRONG_TYPES = {
    "gpu_audit_report": ("thermal_warning_c", "hot", "int"),
    "gpu_canary_upgrade": ("api_timeout", "soon", "int"),
    "gpu_cluster_info": ("page_size", "many", "int"),
    "gpu_host_facts": ("host_root", ["/", "/host"], "is not a directory"),
    "gpu_operator": ("force", "maybe", "bool"),
    "gpu_preflight_info": ("page_size", "many", "int"),
    "gpu_smoke_test": ("timeout", "later", "int"),
    "gpu_triage_info": ("log_lines", "some", "int"),
    "gpu_validate_report": ("console_limit", "few", "int"),
    "nvidia_gpu_facts": ("require_gpus", "perhaps", "bool"),
}

TOKEN, KEY_DATA, PASSWORD = "s3cr3t-t0ken-value", "LS0tLS1CRUdJTiBLRVktLS0tLQo=", "hunter2-password"


def inline_kubeconfig(server="https://127.0.0.1:1"):
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [
            {"name": "tok", "user": {"token": TOKEN}},
            {"name": "key", "user": {"client-key-data": KEY_DATA, "username": "admin", "password": PASSWORD}},
        ],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "tok"}}],
        "current-context": "ctx",
    }


class Forbidden:
    """An API server that answers every request with 403, as Kubernetes does for a missing RBAC rule."""

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None, **kwargs):
        body = {
            "kind": "Status",
            "status": "Failure",
            "reason": "Forbidden",
            "code": 403,
            "message": 'nodes is forbidden: User "gpuops" cannot list resource "nodes" at the cluster scope',
        }
        return harness.Resp(403, body, reason="Forbidden")


class Refusing:
    """An API server address where nothing listens: every request fails to connect."""

    def request(self, method, url, **kwargs):
        raise urllib3.exceptions.MaxRetryError(
            None, url, urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused")
        )


def module(name):
    return importlib.import_module("ansible_collections.gpuops.gpu_operator.plugins.modules." + name)


def run(monkeypatch, name, server=None, **extra):
    args = dict(MODULES[name], **extra)
    return harness.run_module(module(name), monkeypatch, args, server=server)


def assert_clean_failure(out, *named):
    assert out["_kind"] == "fail", out
    assert "Traceback" not in json.dumps(out, default=str)
    assert "exception" not in out, out.get("exception")
    for word in named:
        assert word in out["msg"], (word, out["msg"])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_an_unknown_option_fails_naming_it(monkeypatch, name):
    out = run(monkeypatch, name, no_such_option=1)
    assert_clean_failure(out, "no_such_option", "Supported parameters include")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_wrong_type_fails_naming_the_option_and_the_type(monkeypatch, name):
    option, value, kind = WRONG_TYPES[name]
    out = run(monkeypatch, name, **{option: value})
    assert_clean_failure(out, option, kind)


@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_a_kubeconfig_path_that_does_not_exist_fails_naming_it_and_the_fix(monkeypatch, tmp_path, name):
    missing = str(tmp_path / "no-such-kubeconfig")
    out = run(monkeypatch, name, kubeconfig=missing)
    assert_clean_failure(out, missing, "Set the kubeconfig option")


@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_an_api_server_that_refuses_connections_fails_naming_the_server_and_the_fix(monkeypatch, tmp_path, name):
    out = run(monkeypatch, name, server=Refusing(), kubeconfig=inline_kubeconfig(), **_helm(name, tmp_path))
    assert_clean_failure(out, "https://api.test")
    assert out.get("status") == 0


@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_a_forbidden_request_fails_with_status_403_and_the_permission_to_grant(monkeypatch, tmp_path, name):
    out = run(monkeypatch, name, server=Forbidden(), kubeconfig=inline_kubeconfig(), **_helm(name, tmp_path))
    assert_clean_failure(out, "forbidden")
    assert out["status"] == 403


BAD_INPUTS = {
    "unknown option": {"no_such_option": 1},
    "wrong type": {"api_timeout": "soon"},
    "unreachable server": {},
}


@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_no_secret_of_an_inline_kubeconfig_appears_in_any_result(monkeypatch, tmp_path, name, bad):
    server = Refusing() if bad == "unreachable server" else None
    out = run(monkeypatch, name, server=server, kubeconfig=inline_kubeconfig(), **BAD_INPUTS[bad])
    assert out["_kind"] == "fail"
    masked = {k: v for k, v in out.items() if k != "_no_log"}
    text = json.dumps(masked, default=str)
    assert {TOKEN, KEY_DATA, PASSWORD} <= out["_no_log"]
    for secret in (TOKEN, KEY_DATA, PASSWORD):
        assert secret not in text


def _helm(name, tmp_path):
    """gpu_operator needs a helm binary before it talks to the cluster: a stand-in that answers `helm version`."""
    if name != "gpu_operator":
        return {}
    script = tmp_path / "helm"
    script.write_text("#!/bin/sh\nif [ \"$1\" = version ]; then printf 'v3.19.2'; exit 0; fi\nexit 1\n")
    script.chmod(0o755)
    return {"helm_binary": str(script)}
