"""Every module, given bad input, fails with a message that names the input and the fix: never a traceback, and
never a secret of an inline kubeconfig in its result, whatever fails and when."""

from __future__ import annotations

import importlib
import json

import module_harness as harness
import pytest
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import inputs

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


# --- every option with an input rule, fed generated bad values --------------------------------------------------


_NAMEY = st.one_of(
    st.sampled_from(["", "..", ".", "a/b", "../etc", "a%2Fb", "A", "a b", "-a", "a.", "x" * 254]),
    st.text(min_size=1, max_size=20).map(lambda s: s + "/"),
    st.text(alphabet="ABC_ ", min_size=1, max_size=5),
)
BAD_VALUES = {
    inputs.NAMESPACE: st.one_of(_NAMEY, st.just("x" * 64)),
    inputs.OBJECT_NAME: _NAMEY,
    inputs.POD_REF: st.sampled_from(["", "a/", "/b", "A/b", "ns/a/b", "a b", "..", "ns/..", "../x", "a%2Fb"]),
    inputs.KEY: st.sampled_from(["", "bad key", "-x", "x" * 64, "Ex.com/x", "a/b/c", "/x", "x/"]),
    inputs.LABEL_SET: st.sampled_from([{"app": "a b"}, {"bad key": "v"}, {"a": "x" * 64}]),
    inputs.POSITIVE: st.integers(min_value=-(10**6), max_value=0),
    inputs.NOT_NEGATIVE: st.integers(min_value=-(10**6), max_value=-1),
    inputs.BASENAME: st.one_of(
        st.sampled_from(["", ".", "..", "../x", "a\\b"]), st.text(max_size=8).map(lambda s: s + "/x")
    ),
    inputs.NON_EMPTY: st.sampled_from(["", "   "]),
    inputs.MAPPINGS: st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), min_size=1, max_size=3),
}


class Recorder:
    """An API server that answers every request with an empty success and records the verbs it was sent."""

    def __init__(self):
        self.calls = []

    def request(self, method, url, **kwargs):
        self.calls.append(method)
        return harness.Resp(200, {"kind": "List", "items": [], "metadata": {}})


def _ruled_options():
    """``(module, path, option spec)`` for every option of every module that :data:`inputs.RULES` names."""
    found = []

    def walk(name, spec, prefix=""):
        for option, entry in spec.items():
            path = prefix + option
            if path in inputs.RULES:
                found.append((name, path, entry))
            if entry.get("options"):
                walk(name, entry["options"], path + ".")

    for name in sorted(MODULES):
        walk(name, module(name).argspec())
    return found


def _as_argument(path, entry, bad):
    """The module argument that puts ``bad`` where ``path`` points (a list element, a suboption)."""
    top, _sep, sub = path.partition(".")
    if entry.get("type") == "list" and not isinstance(bad, list):
        bad = [bad]
    if not sub:
        return {top: bad}
    if top == "quarantine_markers":
        return {top: [{"kind": "taint", sub: bad}]}
    return {top: {sub: bad}}


@pytest.mark.parametrize(("name", "path", "entry"), _ruled_options(), ids=lambda v: v if isinstance(v, str) else "")
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_ruled_option_refuses_generated_bad_values_before_any_request(monkeypatch, name, path, entry, data):
    bad = data.draw(BAD_VALUES[inputs.RULES[path]])
    if entry.get("type") == "float":
        bad = float(bad)
    server = Recorder()
    out = run(monkeypatch, name, server=server, kubeconfig=inline_kubeconfig(), **_as_argument(path, entry, bad))
    assert out["_kind"] == "fail", (path, bad, out)
    assert path.rpartition(".")[2] in out["msg"], (path, bad, out["msg"])
    assert "internal error" not in out["msg"] and "exception" not in out
    assert server.calls == [], (path, bad, server.calls)  # refused before the first request, let alone a write
