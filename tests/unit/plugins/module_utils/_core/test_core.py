"""Specification of module_utils/_core: the exception base, the module runner, argument and object helpers, the
layer vocabulary."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import args, errors, layers, objects, text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.module import Requirement, run_module

SPEC = dict(args.KUBECONFIG_ARG_SPEC, name=dict(type="str"))


class Outcome(Exception):
    def __init__(self, kind, result):
        super().__init__(kind)
        self.kind, self.result = kind, result


@pytest.fixture
def captured(monkeypatch):
    """exit_json/fail_json raise Outcome with their keywords and the values the module marked no_log."""

    def capture(kind):
        def _exit(self, **kwargs):
            raise Outcome(kind, dict(kwargs, _no_log=set(self.no_log_values)))

        return _exit

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", capture("exit"))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", capture("fail"))


def run(params, execute, **kwargs):
    with patch_module_args(params), pytest.raises(Outcome) as outcome:
        run_module(SPEC, execute, **kwargs)
    return outcome.value


def test_an_error_becomes_fail_json_with_its_message_status_and_details(captured):
    def execute(module):
        raise errors.GpuOpsError("nodes is forbidden; grant list on nodes", status=403, details={"api_requests": 2})

    out = run({}, execute)
    assert out.kind == "fail"
    assert {k: out.result[k] for k in ("msg", "status", "api_requests")} == {
        "msg": "nodes is forbidden; grant list on nodes",
        "status": 403,
        "api_requests": 2,
    }


def test_an_error_without_an_http_call_has_no_status():
    assert errors.GpuOpsError("bad input").result() == {"msg": "bad input"}


def test_an_unexpected_exception_is_reported_as_an_internal_error_not_a_traceback(captured):
    def execute(module):
        raise KeyError("spec")

    out = run({}, execute)
    assert out.kind == "fail" and out.result["msg"].startswith("internal error in gpuops.gpu_operator (KeyError")
    assert "Traceback" not in out.result["msg"] and "Traceback" in out.result["exception"]


def test_the_result_of_execute_is_the_module_result(captured):
    out = run({"name": "x"}, lambda module: {"changed": False, "name": module.params["name"]})
    assert out.kind == "exit" and out.result["name"] == "x"


def test_a_missing_library_fails_before_execute_runs(captured):
    ran = []
    out = run({}, ran.append, requirements=[Requirement("kubernetes", False, "ImportError: kubernetes")])
    assert ran == [] and out.kind == "fail" and "(kubernetes)" in out.result["msg"]


def test_inline_kubeconfig_secrets_are_no_log_even_when_the_argument_check_fails(captured):
    kubeconfig = {"users": [{"name": "a", "user": {"token": "t0ken", "password": "passw", "username": "user"}}]}
    out = run({"kubeconfig": kubeconfig, "nope": 1}, lambda module: {})
    assert out.kind == "fail" and "nope" in out.result["msg"]
    assert {"t0ken", "passw"} <= out.result["_no_log"] and "user" not in out.result["_no_log"]


def test_object_helpers_read_metadata_of_plain_dicts():
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}, "annotations": {"b": "2"}}}
    assert (objects.name_of(pod), objects.namespace_of(pod), objects.key_of(pod)) == ("p", "ns", "ns/p")
    assert objects.labels_of(pod) == {"a": "1"} and objects.annotations_of(pod) == {"b": "2"}
    assert objects.labels_of({}) == {} and objects.name_of(None) is None


@pytest.mark.parametrize("value, expected", [("8", 8), (3, 3), ("8Gi", 0), (None, 0)])
def test_to_int_reads_kubernetes_counts(value, expected):
    assert objects.to_int(value) == expected


def test_is_true_reads_label_values():
    assert objects.is_true("true") and objects.is_true(True) and not objects.is_true("false")


def test_markdown_cells_escape_pipes_and_fold_lines():
    assert text.md_cell("a|b\nc") == "a\\|b c" and text.md_cell(None) == "-"
    assert text.md_table(["x", "y"], [["1", None]]) == ["| x | y |", "|---|---|", "| 1 | - |"]


def test_the_layers_run_from_the_driver_up():
    assert layers.LAYERS[0] == "driver" and layers.LAYERS.index("toolkit") < layers.LAYERS.index("device-plugin")
    assert layers.in_layer_order(["monitoring", "driver", "scheduling"]) == ("driver", "scheduling", "monitoring")
    assert layers.layer_rank("nope") == len(layers.LAYERS)
    with pytest.raises(ValueError, match="unknown layer"):
        layers.in_layer_order(["device_plugin"])
