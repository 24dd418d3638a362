"""Specification of plugins/modules/gpu_triage_info.py with a stubbed API server (no cluster)."""

from __future__ import annotations

import module_harness as harness
import pytest
from module_harness import ReadOnlyApiServer, Resp

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_triage_info


def gpu_node(name, alloc="8"):
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"}},
        "spec": {},
        "status": {
            "capacity": {"nvidia.com/gpu": alloc},
            "allocatable": {"nvidia.com/gpu": alloc},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pending(name, gpus=1):
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": "u-" + name},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": "Pending"},
    }


CRASHING_DRIVER = {
    "metadata": {"name": "nvidia-driver-x", "namespace": "gpu-operator", "labels": {"app": "nvidia-driver-daemonset"}},
    "spec": {"nodeName": "g0"},
    "status": {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "nvidia-driver-ctr",
                "ready": False,
                "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {
                    "terminated": {
                        "reason": "Error",
                        "exitCode": 1,
                        "message": "Could not resolve Linux kernel version",
                    }
                },
            }
        ],
    },
}
POLICY = {
    "metadata": {"name": "cluster-policy"},
    "spec": {"driver": {"enabled": True}},
    "status": {"state": "notReady", "namespace": "gpu-operator"},
}


def stub_server(nodes=(), pods=(), operator_pods=(), previous_log=True, dra=None, policies=(POLICY,), operator_ns=None):
    """The API server holding ``nodes``, the ``pods`` of namespace ml, the operator's pods (each with a log; its
    previous container's too unless ``previous_log`` is false) in ``operator_ns``, ClusterPolicies, and with ``dra``
    (``{plural: items}``) resource.k8s.io/v1."""
    operator_ns = operator_ns or "gpu-operator"
    collections = {
        "/api/v1/nodes": list(nodes),
        "/api/v1/pods": list(pods) + list(operator_pods),
        "/api/v1/namespaces/ml/pods": list(pods),
        "/api/v1/namespaces/%s/pods" % operator_ns: list(operator_pods),
        "/apis/nvidia.com/v1/clusterpolicies": list(policies),
        "/apis/scheduling.k8s.io/v1/priorityclasses": [],
    }
    if dra is not None:
        for plural in ("resourceslices", "deviceclasses", "resourceclaims"):
            collections["/apis/resource.k8s.io/v1/" + plural] = list(dra.get(plural, []))

    def log(query):
        if query.get("previous") == "true" and not previous_log:
            return Resp(400, {"message": "previous terminated container not found"}, "Bad Request")
        return Resp(200, b"starting\nCould not resolve Linux kernel version\n", raw=True)

    objects = {"/api/v1/namespaces/ml": {"metadata": {"name": "ml"}}}
    for pod in operator_pods:
        objects["/api/v1/namespaces/%s/pods/%s/log" % (operator_ns, pod["metadata"]["name"])] = log
    return ReadOnlyApiServer("gpu_triage_info", collections, objects)


def run_module(server, monkeypatch, check=False, **args):
    return harness.run_module(gpu_triage_info, monkeypatch, args, server=server, check=check)


@pytest.mark.parametrize(
    "args, message",
    [
        ({"pod": "train"}, "has no namespace: write it as NAMESPACE/NAME"),
        ({"pod": "ml/"}, "option pod: 'ml/' is refused: it is empty (it must be NAME or NAMESPACE/NAME)"),
        ({"pod": "ml/a/b"}, "option pod: 'ml/a/b' is refused: it is not a DNS-1123 label"),
        ({"pod": ""}, "option pod: '' is refused: it is empty"),
        ({"namespace": "no/such"}, "option namespace: 'no/such' is refused"),
        ({"pod": "ml/a", "namespace": "other"}, "names namespace ml but namespace is other"),
        ({"pod": "ml/a", "node": "g0"}, "mutually exclusive"),
        ({}, "one of the following is required: pod, namespace, node"),
        ({"node": "g0", "log_lines": 0}, "option log_lines: 0 is refused"),
        ({"node": "g0", "routes": {"drivers": "x"}}, "routes: unknown layer 'drivers'; route one of driver, node"),
    ],
)
def test_bad_input_fails_naming_it(monkeypatch, args, message):
    result = run_module(stub_server(), monkeypatch, **args)
    assert result["_kind"] == "fail" and message in result["msg"]


def test_a_pending_pod_on_a_broken_driver_reports_the_driver_layer_and_reads_its_previous_log(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0", alloc="0")], pods=[pending("train")], operator_pods=[CRASHING_DRIVER])
    result = run_module(server, monkeypatch, pod="ml/train")
    assert result["_kind"] == "exit" and result["changed"] is False
    assert result["first_failing_layer"] == "driver"
    crash = result["findings"][0]
    assert crash["reason"] == "DriverCrashLoop"
    assert crash["evidence"]["log_tail"][-1] == "Could not resolve Linux kernel version"
    log_reads = [q for p, q in server.requests if p.endswith("/log")]
    assert log_reads == [{"container": "nvidia-driver-ctr", "tailLines": "20", "previous": "true"}]
    assert result["summary_lines"][0] == "pod ml/train (Pending, nvidia.com/gpu=1): first failing layer: driver"


def test_every_finding_names_who_should_act_on_it_by_its_layer(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0", alloc="0")], pods=[pending("train")], operator_pods=[CRASHING_DRIVER])
    result = run_module(server, monkeypatch, pod="ml/train")
    assert {(f["layer"], f["owner"]) for f in result["findings"]} >= {("driver", "node-os-team")}
    assert all(f["owner"] for f in result["pods"][0]["findings"])
    routed = run_module(server, monkeypatch, pod="ml/train", routes={"driver": "infra-oncall"})
    assert routed["findings"][0]["owner"] == "infra-oncall"
    assert routed["pods"][0]["findings"][0]["owner"] == "infra-oncall"


def test_without_a_previous_container_the_current_log_is_read(monkeypatch):
    server = stub_server(
        nodes=[gpu_node("g0", alloc="0")], pods=[pending("train")], operator_pods=[CRASHING_DRIVER], previous_log=False
    )
    result = run_module(server, monkeypatch, pod="ml/train")
    assert [q.get("previous") for p, q in server.requests if p.endswith("/log")] == ["true", None]
    assert result["findings"][0]["evidence"]["log_tail"]


def test_the_operator_namespace_is_the_one_the_clusterpolicy_reports_and_the_names_are_returned(monkeypatch):
    renamed = dict(POLICY, metadata={"name": "gpu-cluster-policy"}, status={"namespace": "nvidia-gpu-operator"})
    server = stub_server(nodes=[gpu_node("g0")], policies=[renamed], operator_ns="nvidia-gpu-operator")
    result = run_module(server, monkeypatch, node="g0")
    assert result["operator"]["namespace"] == "nvidia-gpu-operator"
    assert result["operator"]["cluster_policy"] == "gpu-cluster-policy"
    assert ("/api/v1/namespaces/nvidia-gpu-operator/pods", {"fieldSelector": "spec.nodeName=g0", "limit": "500"}) in (
        server.requests
    )


def test_a_namespace_of_many_pending_pods_costs_a_fixed_number_of_requests(monkeypatch):
    def requests_for(count):
        server = stub_server(nodes=[gpu_node("g0")], pods=[pending("p%03d" % i, gpus=9) for i in range(count)])
        result = run_module(server, monkeypatch, namespace="ml", max_logs=0)
        assert len(result["pods"]) == count
        return result["api_requests"]

    few, many = requests_for(3), requests_for(300)
    assert few == many <= 15


def test_the_pods_of_a_namespace_are_only_the_gpu_pods_that_need_help(monkeypatch):
    running = pending("ok")
    running["status"]["phase"] = "Running"
    running["spec"]["nodeName"] = "g0"
    cpu_only = {
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }
    server = stub_server(nodes=[gpu_node("g0")], pods=[running, cpu_only, pending("stuck", gpus=8)])
    result = run_module(server, monkeypatch, namespace="ml")
    assert [p["name"] for p in result["pods"]] == ["stuck"]
    assert "InsufficientGPU" in [f["reason"] for f in result["pods"][0]["findings"]]


def test_an_unknown_node_fails_naming_it(monkeypatch):
    result = run_module(stub_server(nodes=[gpu_node("g0")]), monkeypatch, node="nope")
    assert result["_kind"] == "fail" and "node nope does not exist" in result["msg"]


def test_a_missing_pod_is_a_finding_not_a_failure(monkeypatch):
    result = run_module(stub_server(nodes=[gpu_node("g0")]), monkeypatch, pod="ml/ghost")
    assert result["_kind"] == "exit"
    assert [f["reason"] for f in result["findings"]] == ["PodNotFound"]


@pytest.mark.parametrize("target", [{"namespace": "no-such-ns"}, {"pod": "no-such-ns/train"}])
def test_a_missing_namespace_is_named_as_missing_not_read_as_a_healthy_or_missing_pod(monkeypatch, target):
    result = run_module(stub_server(nodes=[gpu_node("g0")]), monkeypatch, **target)
    assert result["_kind"] == "exit", result.get("msg")
    assert result["first_failing_layer"] == "scheduling"
    assert [(f["reason"], f["severity"]) for f in result["findings"]] == [("NamespaceNotFound", "error")]
    assert "namespace no-such-ns does not exist" in result["findings"][0]["message"]
    assert "kubectl get namespaces" in result["findings"][0]["fix"]
    assert "no blocking problem found" not in result["summary"]


def test_check_mode_returns_the_same_data(monkeypatch):
    server = stub_server(nodes=[gpu_node("g0", alloc="0")], operator_pods=[CRASHING_DRIVER])
    normal = run_module(server, monkeypatch, node="g0")
    checked = run_module(server, monkeypatch, check=True, node="g0")
    for key in ("first_failing_layer", "findings", "layers", "summary"):
        assert normal[key] == checked[key]
    assert normal["first_failing_layer"] == "driver"


# ------------------------------------------------------------------------------------------------
# DRA (resource.k8s.io/v1)


def dra_node(name):
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.dra-driver": "true"}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def claim_pod(name, template="one-gpu"):
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": "u-" + name},
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        },
        "status": {"phase": "Pending"},
    }


SLICE = {
    "metadata": {"name": "d0-gpu.nvidia.com"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "d0",
        "pool": {"name": "d0", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}],
    },
}
DRA = {"deviceclasses": [{"metadata": {"name": "gpu.nvidia.com"}, "spec": {}}], "resourceslices": [SLICE]}


def test_a_claim_pod_whose_template_is_missing_is_named_through_the_dra_lists(monkeypatch):
    server = stub_server(nodes=[dra_node("d0")], pods=[claim_pod("train", "nope")], dra=DRA, policies=())
    result = run_module(server, monkeypatch, namespace="ml")
    assert result["_kind"] == "exit" and [p["name"] for p in result["pods"]] == ["train"]
    assert result["pods"][0]["first_failing_layer"] == "dra"
    assert "ClaimTemplateNotFound" in [f["reason"] for f in result["pods"][0]["findings"]]
    dra_paths = [p for p in server.paths() if p.startswith("/apis/resource.k8s.io/")]
    assert dra_paths == [
        "/apis/resource.k8s.io/v1/deviceclasses",
        "/apis/resource.k8s.io/v1/resourceslices",
        "/apis/resource.k8s.io/v1/resourceclaims",
        "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates",
    ]


def test_a_namespace_of_many_claim_pods_costs_a_fixed_number_of_requests(monkeypatch):
    def requests_for(count):
        server = stub_server(
            nodes=[dra_node("d0")], pods=[claim_pod("p%03d" % i) for i in range(count)], dra=DRA, policies=()
        )
        return run_module(server, monkeypatch, namespace="ml", max_logs=0)["api_requests"]

    assert requests_for(3) == requests_for(300) <= 19


def test_a_node_triage_reads_the_device_classes_and_only_that_nodes_slices(monkeypatch):
    server = stub_server(nodes=[dra_node("d0")], dra=DRA, policies=())
    result = run_module(server, monkeypatch, node="d0")
    assert [(p, q.get("fieldSelector")) for p, q in server.requests if p.startswith("/apis/resource.k8s.io/")] == [
        ("/apis/resource.k8s.io/v1/deviceclasses", None),
        ("/apis/resource.k8s.io/v1/resourceslices", "spec.nodeName=d0"),
    ]
    assert result["nodes"]["d0"]["mode"] == "dra" and result["nodes"]["d0"]["dra"]["total"] == 1
    assert "DraPluginMissing" in [f["reason"] for f in result["findings"]]
