"""Specification of plugins/modules/gpu_smoke_test.py with a stubbed API server: inputs, check mode, result shape."""

from __future__ import annotations

from urllib.parse import urlsplit

import module_harness as harness
import pytest
from module_harness import Resp

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_smoke_test


class ReadOnlyServer:
    """Serves two GPU nodes and one CPU node; records every request."""

    def __init__(self):
        self.calls = []

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None):
        path = urlsplit(url).path
        self.calls.append((method, path))
        assert method == "GET", "check mode must only read"
        nodes = [
            {
                "metadata": {"name": n, "labels": {"nvidia.com/gpu.present": "true"}},
                "status": {"allocatable": {"nvidia.com/gpu": "8"}},
            }
            for n in ("g0", "g1")
        ] + [{"metadata": {"name": "cpu0", "labels": {}}, "status": {}}]
        if path == "/api/v1/nodes":
            return Resp(200, {"items": nodes, "metadata": {}})
        return Resp(200, {"items": [], "metadata": {}})


def run_module(server, monkeypatch, check=False, **args):
    return harness.run_module(gpu_smoke_test, monkeypatch, args, server=server, check=check)


def test_check_mode_plans_one_pod_per_gpu_node_and_only_reads(monkeypatch):
    server = ReadOnlyServer()
    res = run_module(server, monkeypatch, check=True, gpus="all", mode="nvidia-smi")
    assert res["_kind"] == "exit" and res["changed"] is False and res["nodes"] == {}
    assert [(p["node"], p["resources"]) for p in res["planned"]] == [
        ("g0", {"nvidia.com/gpu": "8"}),
        ("g1", {"nvidia.com/gpu": "8"}),
    ]
    assert {p["image"] for p in res["planned"]} == {"nvcr.io/nvidia/cuda:12.5.0-base-ubuntu22.04"}
    assert res["summary"]["total"] == 2
    assert {m for m, _p in server.calls} == {"GET"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"gpus": "lots"}, "gpus must be a positive integer or 'all', got 'lots'"),
        ({"concurrency": 0}, "option concurrency: 0 is refused"),
        ({"timeout": 0}, "option timeout: 0 is refused"),
        ({"poll_interval": 0}, "option poll_interval: 0.0 is refused"),
        ({"nodes": ["nope"]}, "nodes nope are not in the cluster"),
        ({"sample": 1, "percent": 10}, "mutually exclusive"),
        ({"admin_access": True}, "admin_access only apply to allocation=claim; set allocation: claim"),
        ({"product": "x", "mig_profile": "1g.10gb"}, "product, mig_profile only apply to allocation=claim"),
    ],
)
def test_bad_input_fails_naming_it(monkeypatch, args, message):
    res = run_module(ReadOnlyServer(), monkeypatch, check=True, **args)
    assert res["_kind"] == "fail" and message in res["msg"]


def test_the_argument_spec_keeps_the_shared_kubeconfig_options():
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.args import KUBECONFIG_ARG_SPEC

    spec = gpu_smoke_test.argspec()
    assert set(KUBECONFIG_ARG_SPEC) <= set(spec)
    assert spec["gpus"]["default"] == "1" and spec["mode"]["default"] == "vectoradd"


def test_check_mode_in_claim_mode_plans_the_template_and_the_namespace_label_and_only_reads(monkeypatch):
    server = ReadOnlyServer()
    res = run_module(
        server, monkeypatch, check=True, allocation="claim", admin_access=True, gpus="all", mig_profile="1g.10gb"
    )
    assert res["_kind"] == "exit" and res["changed"] is False
    template = res["claim_template"]
    assert template["metadata"]["name"] == "gpuops-smoke-%s" % res["run_id"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "mig.nvidia.com",
        "allocationMode": "All",
        "adminAccess": True,
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}],
    }
    assert [(p["node"], p["resources"]) for p in res["planned"]] == [
        ("g0", {"mig.nvidia.com": "all"}),
        ("g1", {"mig.nvidia.com": "all"}),
    ]
    assert res["namespace_labelled"] is True  # "default" has no admin-access label: the run would add it
    assert {m for m, _p in server.calls} == {"GET"}


def test_in_resource_mode_there_is_no_template(monkeypatch):
    res = run_module(ReadOnlyServer(), monkeypatch, check=True)
    assert res["claim_template"] is None and res["namespace_labelled"] is False
