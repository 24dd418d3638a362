"""Specification of the input checks of _core: Kubernetes names and keys, positive numbers and report basenames
(inputs), user YAML within bounds (bounded_yaml), and every shape a kubeconfig takes with every secret it holds
(kubeconfig); and of the module runner ending on SIGTERM through its normal exit."""

from __future__ import annotations

import os
import signal

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import args, bounded_yaml, inputs, kubeconfig
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import run_module

SPEC = dict(
    args.KUBECONFIG_ARG_SPEC,
    namespace=dict(type="str"),
    nodes=dict(type="list", elements="str"),
    basename=dict(type="str"),
    admission=dict(type="dict", options=dict(taint_key=dict(type="str"))),
    quarantine_markers=dict(type="list", elements="dict", options=dict(key=dict(type="str"))),
    pod_labels=dict(type="dict"),
)


def refused(**params):
    with pytest.raises(ArgumentError) as info:
        inputs.check_inputs(params, SPEC)
    return info.value.msg


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"namespace": "a/b"}, "option namespace: 'a/b' is refused: it is not a DNS-1123 label"),
        ({"namespace": ".."}, "option namespace: '..' is refused"),
        ({"namespace": ""}, "option namespace: '' is refused: it is empty"),
        ({"namespace": "x" * 64}, "at most 63"),
        ({"nodes": ["ok-1", "../etc"]}, "option nodes: '../etc' is refused"),
        ({"nodes": ["a%2Fb"]}, "option nodes: 'a%2Fb' is refused"),
        ({"api_timeout": 0}, "option api_timeout: 0 is refused: it is not greater than 0"),
        ({"api_timeout": -1}, "option api_timeout: -1 is refused"),
        ({"basename": "../x"}, "option basename: '../x' is refused: it contains a path separator"),
        ({"basename": ".."}, "option basename: '..' is refused"),
        ({"admission": {"taint_key": "bad key!"}}, "option admission.taint_key: 'bad key!' is refused"),
        ({"admission": {"taint_key": "Example.com/x"}}, "its prefix 'Example.com' is not a DNS-1123 subdomain"),
        ({"quarantine_markers": [{"key": "ok.io/a"}, {"key": "-x"}]}, "option quarantine_markers.key: '-x'"),
        ({"pod_labels": {"app": "a b"}}, "label 'app': it is not a label value"),
    ],
)
def test_a_value_kubernetes_would_refuse_is_refused_naming_the_option_and_the_fix(params, named):
    msg = refused(**params)
    assert named in msg and "nothing was changed" in msg and "Set " in msg


def test_valid_values_and_options_left_unset_pass():
    inputs.check_inputs(
        {
            "namespace": "gpu-operator",
            "nodes": ["h100-0", "node.example.com"],
            "api_timeout": 30,
            "basename": "gpu-report.2026",
            "admission": {"taint_key": "gpuops.io/unvalidated"},
            "quarantine_markers": [{"key": "nvidia.com/gpu-health"}],
            "pod_labels": {"app.kubernetes.io/name": "smoke", "empty": ""},
            "context": "anything / goes",
        },
        SPEC,
    )
    inputs.check_inputs({"namespace": None, "admission": None}, SPEC)


@given(st.text(min_size=1, max_size=80))
def test_no_refused_namespace_or_node_name_can_name_another_path(value):
    """Whatever passes as a namespace or node name has no '/', no '%' and is not '.' or '..'."""
    for option in ("namespace", "nodes"):
        try:
            inputs.check_inputs({option: [value] if option == "nodes" else value}, SPEC)
        except ArgumentError:
            continue
        assert "/" not in value and "%" not in value and value not in (".", "..")


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*" + chr(97 + i)] * 10)) for i in range(8)
)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (BILLION_LAUGHS, "expands to more than"),
        ("[" * 200 + "]" * 200, "nests deeper than 64 levels"),
        ("a: [1, 2\nb: {", "is not valid YAML at line"),
        ("x" * 100, "is 100 bytes, more than 50"),
    ],
)
def test_yaml_beyond_its_bounds_is_refused_before_anything_is_built(text, named):
    with pytest.raises(ArgumentError, match=named):
        bounded_yaml.load_bounded(text, "values_files entry v.yml", max_bytes=50 if len(text) == 100 else 4096)


def test_yaml_within_bounds_loads_with_its_aliases():
    assert bounded_yaml.load_bounded("a: &x {k: 1}\nb: *x\n", "values") == {"a": {"k": 1}, "b": {"k": 1}}


TOKEN, KEY, ID_TOKEN, REFRESH, CLIENT_SECRET, ENV_SECRET, ARG_SECRET, PASSWORD = (
    "tok3n-value-1",
    "a2V5LWRhdGEtc2VjcmV0",
    "eyJpZC10b2tlbi1zZWNyZXQ",
    "refresh-secret-2",
    "client-secret-3",
    "env-secret-4",
    "arg-secret-5",
    "basic-pass-6",
)
FULL = {
    "apiVersion": "v1",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [
        {"name": "t", "user": {"token": TOKEN, "client-key-data": KEY}},
        {
            "name": "oidc",
            "user": {
                "auth-provider": {
                    "name": "oidc",
                    "config": {
                        "client-id": "public-client",
                        "id-token": ID_TOKEN,
                        "refresh-token": REFRESH,
                        "client-secret": CLIENT_SECRET,
                    },
                }
            },
        },
        {
            "name": "exec",
            "user": {
                "exec": {
                    "command": "get-token",
                    "env": [{"name": "API_SECRET", "value": ENV_SECRET}],
                    "args": ["--token", ARG_SECRET, "--region=eu-west-1"],
                }
            },
        },
        {"name": "basic", "user": {"username": "admin", "password": PASSWORD}},
    ],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "t"}}],
    "current-context": "x",
}
SECRETS = {TOKEN, KEY, ID_TOKEN, REFRESH, CLIENT_SECRET, ENV_SECRET, ARG_SECRET, PASSWORD}


def as_text(data):
    import yaml

    return yaml.safe_dump(data, default_flow_style=False)


def test_every_secret_of_a_kubeconfig_mapping_is_found_and_nothing_public():
    found = kubeconfig.kubeconfig_secrets(FULL)
    assert found == SECRETS


def test_kubeconfig_text_is_a_secret_as_a_whole_and_for_each_credential_it_holds():
    text = as_text(FULL)
    assert kubeconfig.kubeconfig_secrets(text) >= SECRETS | {text}
    assert kubeconfig.describe(text) == "(kubeconfig given as YAML text)" and kubeconfig.is_text(text)


def test_kubeconfig_text_that_cannot_be_parsed_still_has_its_credentials_masked():
    broken = "users:\n- name: u\n  user:\n    token: %s\n    client-key-data: %s\n  [unclosed" % (TOKEN, KEY)
    assert {TOKEN, KEY, broken} <= kubeconfig.kubeconfig_secrets(broken)


@pytest.mark.parametrize("raw", ["/path/to/kubeconfig", None, 3, {"users": "x"}, {"users": [None, "x", {"user": 1}]}])
def test_a_path_or_a_malformed_kubeconfig_holds_no_secret_and_does_not_fail(raw):
    assert kubeconfig.kubeconfig_secrets(raw) == set()


def test_short_strings_and_yaml_words_are_never_masked():
    data = {"users": [{"user": {"token": "abc", "password": "true", "exec": {"env": [{"value": "1"}]}}}]}
    assert kubeconfig.kubeconfig_secrets(data) == set()


class Outcome(Exception):
    def __init__(self, kind, result):
        super().__init__(kind)
        self.kind, self.result = kind, result


@pytest.fixture
def captured(monkeypatch):
    def capture(kind):
        def _exit(self, **kwargs):
            raise Outcome(kind, dict(kwargs, _no_log=set(self.no_log_values), _tmpdir=self.tmpdir))

        return _exit

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", capture("exit"))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", capture("fail"))


def run(params, execute):
    with patch_module_args(params), pytest.raises(Outcome) as outcome:
        run_module(SPEC, execute)
    return outcome.value


def test_a_bad_value_fails_before_execute_runs(captured):
    ran = []
    out = run({"namespace": "a/b"}, ran.append)
    assert ran == [] and out.kind == "fail" and "option namespace" in out.result["msg"]


def test_sigterm_ends_the_module_through_its_exit_with_temporary_files_in_its_own_directory(captured):
    made = []

    def execute(module):
        import tempfile

        fd, path = tempfile.mkstemp()  # as the kubernetes library writes a client key
        os.close(fd)
        made.append(path)
        os.kill(os.getpid(), signal.SIGTERM)
        return {"changed": False}

    before = signal.getsignal(signal.SIGTERM)
    out = run({}, execute)
    assert out.kind == "fail" and out.result["msg"].startswith("interrupted (SIGTERM)")
    assert os.path.dirname(made[0]) == out.result["_tmpdir"]
    assert signal.getsignal(signal.SIGTERM) is before
