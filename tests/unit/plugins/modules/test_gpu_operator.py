"""Specification of plugins/modules/gpu_operator.py: argument spec = docs, input errors named, result shape.
The life cycle itself is specified in tests/unit/plugins/module_utils/_operator/test_operator_release.py."""

from __future__ import annotations

import os
import stat

import module_harness as harness
import pytest
import yaml
from ansible.module_utils import basic

from ansible_collections.gpuops.gpu_operator.plugins.doc_fragments import helm as helm_fragment
from ansible_collections.gpuops.gpu_operator.plugins.doc_fragments import kubeconfig as kubeconfig_fragment
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import release as _operator_release
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_operator

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "tok-en-secret"}}],
    "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "ctx",
}


def run_module(monkeypatch, server=None, **args):
    return harness.run_module(gpu_operator, monkeypatch, args, server=server)


class EmptyCluster:
    """An API server with no nodes: the module's access check passes."""

    def request(self, method, url, **kwargs):
        return harness.Resp(200, {"kind": "NodeList", "items": [], "metadata": {}})


def fake_helm(tmp_path, version="v4.0.1"):
    script = tmp_path / "helm"
    script.write_text("#!/bin/sh\nif [ \"$1\" = version ]; then printf '%s'; exit 0; fi\nexit 0\n" % version)
    script.chmod(0o755)
    return str(script)


def test_every_option_is_documented_and_every_documented_option_exists():
    documented = set(yaml.safe_load(gpu_operator.DOCUMENTATION)["options"])
    for fragment in (helm_fragment, kubeconfig_fragment):
        documented |= set(yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)["options"])
    assert documented == set(gpu_operator.argspec())


def test_the_password_is_no_log():
    assert gpu_operator.argspec()["chart_repo_password"]["no_log"] is True


def test_present_needs_a_chart_ref(monkeypatch):
    out = run_module(monkeypatch, state="present")
    assert out["_kind"] == "fail" and "chart_ref" in out["msg"]


def test_a_wrong_context_fails_naming_it_and_the_available_ones(monkeypatch, tmp_path):
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump(KUBECONFIG))
    out = run_module(
        monkeypatch, chart_ref="gpu-operator", chart_repo_url="http://x", kubeconfig=str(kc), context="nope"
    )
    assert out["_kind"] == "fail" and "context 'nope' is not in kubeconfig" in out["msg"] and "ctx" in out["msg"]


def test_a_missing_helm_binary_fails_naming_the_option(monkeypatch, tmp_path):
    out = run_module(
        monkeypatch,
        chart_ref="gpu-operator",
        chart_repo_url="http://x",
        kubeconfig=KUBECONFIG,
        helm_binary=str(tmp_path / "no-helm"),
    )
    assert out["_kind"] == "fail" and "helm_binary" in out["msg"]


def test_an_inline_kubeconfig_reaches_helm_as_a_private_file_and_its_token_is_no_log(monkeypatch, tmp_path):
    seen = {}

    class Recorder:
        def __init__(self, params, helm, kube):
            seen["kubeconfig"] = helm.kubeconfig
            seen["mode"] = stat.S_IMODE(os.stat(helm.kubeconfig).st_mode)
            with open(helm.kubeconfig) as handle:
                seen["content"] = yaml.safe_load(handle)
            seen["check_mode"] = params.check_mode
            self.warnings = []

        def run(self):
            return {"changed": False, "plan": {"action": "none"}, "release": None}

    monkeypatch.setattr(gpu_operator, "OperatorRelease", Recorder)
    out = run_module(
        monkeypatch,
        server=EmptyCluster(),
        chart_ref="gpu-operator",
        chart_repo_url="http://x",
        kubeconfig=KUBECONFIG,
        helm_binary=fake_helm(tmp_path),
        _ansible_check_mode=True,
    )
    assert out["_kind"] == "exit" and out["helm_version"] == "v4.0.1" and out["changed"] is False
    assert seen["mode"] == 0o600 and seen["content"]["current-context"] == "ctx" and seen["check_mode"] is True
    assert not os.path.exists(seen["kubeconfig"])  # removed with helm's temporary directory
    assert "tok-en-secret" in out["_no_log"]


def test_a_refusal_fails_with_its_reason_and_details(monkeypatch, tmp_path):
    class Refuses:
        def __init__(self, *a, **kw):
            self.warnings = []

        def run(self):
            raise _operator_release.ReleaseError("upgrade from v25.10.1 to v26.7.0 skips ...", refused=True)

    monkeypatch.setattr(gpu_operator, "OperatorRelease", Refuses)
    out = run_module(
        monkeypatch,
        server=EmptyCluster(),
        chart_ref="gpu-operator",
        chart_repo_url="http://x",
        kubeconfig=KUBECONFIG,
        helm_binary=fake_helm(tmp_path, "v3.19.2"),
    )
    assert out["_kind"] == "fail" and out["refused"] is True and "skips" in out["msg"]
    assert out["helm_version"] == "v3.19.2"


@pytest.mark.parametrize("fails", [False, True], ids=["exit", "fail"])
def test_release_warnings_go_through_module_warn_never_as_a_result_key(monkeypatch, tmp_path, fails):
    warned = []

    class Warns:
        def __init__(self, *a, **kw):
            self.warnings = []

        def run(self):
            self.warnings.append("downgrading v26.3.3 -> v25.10.1 because force is set")
            if fails:
                raise _operator_release.ReleaseError("helm upgrade to v25.10.1 failed", changed=True)
            return {"changed": True, "plan": {"action": "upgrade"}, "release": None}

    monkeypatch.setattr(gpu_operator, "OperatorRelease", Warns)
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    out = run_module(
        monkeypatch,
        server=EmptyCluster(),
        chart_ref="gpu-operator",
        chart_repo_url="http://x",
        kubeconfig=KUBECONFIG,
        helm_binary=fake_helm(tmp_path),
    )
    assert out["_kind"] == ("fail" if fails else "exit") and "warnings" not in out
    assert warned == ["downgrading v26.3.3 -> v25.10.1 because force is set"]


@pytest.mark.parametrize("given, expected", [({}, True), ({"rollback_on_failure": False}, False)])
def test_rollback_on_failure_defaults_to_true_and_reaches_the_release(monkeypatch, tmp_path, given, expected):
    seen = []
    monkeypatch.setattr(
        gpu_operator.OperatorRelease, "run", lambda self: seen.append(self.p.rollback_on_failure) or {"changed": False}
    )
    args = dict(chart_ref="gpu-operator", chart_repo_url="http://x", kubeconfig=KUBECONFIG, **given)
    out = run_module(monkeypatch, server=EmptyCluster(), helm_binary=fake_helm(tmp_path), **args)
    assert out["_kind"] == "exit" and seen == [expected]
