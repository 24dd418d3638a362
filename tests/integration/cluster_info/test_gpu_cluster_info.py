"""gpu_cluster_info against the real test bed, run through ansible-playbook as the least-privilege identity."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.integration.helpers import module_runner
from tests.sim import profiles

READ_VERBS = {"get", "list"}


@pytest.fixture(scope="module")
def run_info(testbed, tmp_path_factory):
    """Returns run(check=False, **module_args) -> the registered result (dict)."""
    return module_runner(testbed, tmp_path_factory.mktemp("cluster-info"), "gpu_cluster_info")


@pytest.fixture(scope="module")
def default_run(testbed, run_info):
    mark = testbed.audit_mark()
    result = run_info(node_detail="all")
    time.sleep(1.0)  # audit events are flushed asynchronously
    return result, testbed.audit_events(mark, user=testbed.sa_username)


def _gpu_pools(testbed):
    return [p for p in profiles.load(testbed.profile).pools if p.gpu is not None]


def test_every_gpu_node_is_reported_and_no_other_node(testbed, default_run):
    result, _unused = default_run
    assert not result.get("failed"), result.get("msg")
    expected = {name for pool in _gpu_pools(testbed) for name in pool.node_names()}
    assert set(result["nodes"]) == expected


def test_capacity_allocatable_and_gpu_labels_match_the_profile(testbed, default_run):
    result, _unused = default_run
    for pool in _gpu_pools(testbed):
        for name in pool.node_names():
            node = result["nodes"][name]
            assert node["ready"] is True
            assert node["capacity"]["nvidia.com/gpu"] == pool.gpu.count
            assert node["allocatable"]["nvidia.com/gpu"] == pool.gpu.count
            assert node["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"
            assert node["kernel_version"] or node["kubelet_version"]
    totals = result["totals"]
    assert totals["gpu_allocatable"] == sum(p.gpu.count * p.count for p in _gpu_pools(testbed))
    assert totals["nodes"] == totals["nodes_ready"] == sum(p.count for p in _gpu_pools(testbed))


def test_reads_only_and_in_a_bounded_number_of_requests(testbed, default_run):
    result, events = default_run
    assert result["changed"] is False
    assert result["api_requests"] <= 10
    verbs = {e["verb"] for e in events}
    assert verbs <= READ_VERBS, verbs
    assert 0 < len(events) <= result["api_requests"]
    assert not any(
        e.get("objectRef", {}).get("name")
        for e in events
        if e["verb"] == "get" and e.get("objectRef", {}).get("resource") == "nodes"
    ), "one GET per node is what this module avoids"


def test_by_default_only_the_nodes_with_a_problem_come_back_and_the_totals_count_every_node(run_info, default_run):
    result, _unused = default_run
    fleet = run_info()
    full_summary = result["node_summary"]
    assert set(full_summary) == set(result["nodes"]), "with node_detail=all the summary covers every GPU node"
    for name, node in result["nodes"].items():
        assert full_summary[name]["ready"] is node["ready"]
        assert full_summary[name]["operands_ready"] is node["operands_ready"]
        assert full_summary[name]["gpu_allocatable"] == node["allocatable"].get("nvidia.com/gpu")
        assert ("operands-not-ready" in full_summary[name]["problems"]) is not node["operands_ready"]
    with_problem = {name for name, line in full_summary.items() if line["problems"]}
    assert set(fleet["nodes"]) == set(fleet["node_summary"]) == with_problem
    for name, node in fleet["nodes"].items():
        assert node["name"] == name and "operands" in node, "a node with a problem keeps its full view"
    assert fleet["totals"] == result["totals"]
    assert fleet["api_requests"] == result["api_requests"], "the same requests whatever the detail"


def test_kubernetes_version_and_crd_presence_are_reported(testbed, default_run):
    from kubernetes import client

    result, _unused = default_run
    version = client.VersionApi(testbed.api_client()).get_code()
    assert result["kubernetes_version"]["git_version"] == version.git_version
    crds = {
        c.metadata.name for c in client.ApiextensionsV1Api(testbed.api_client()).list_custom_resource_definition().items
    }
    for name in ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"):
        assert result["crds"][name] is (name in crds)
    if "clusterpolicies.nvidia.com" not in crds:
        assert result["cluster_policy"] is None


def test_label_selector_narrows_the_node_list_server_side(testbed, run_info):
    pools = [p for p in _gpu_pools(testbed) if p.labels.get("gpuops.io/rack") == "r1"]
    if not pools:
        pytest.skip("profile has no pool labelled gpuops.io/rack=r1")
    result = run_info(label_selector="gpuops.io/rack=r1", node_detail="all")
    assert set(result["nodes"]) == {n for p in pools for n in p.node_names()}


@pytest.fixture
def operand_namespace(testbed):
    """A throwaway namespace with two operand pods on the first GPU node, one crash-looping by name."""
    from kubernetes import client

    api = client.CoreV1Api(testbed.api_client())
    ns = "gci-%s" % uuid.uuid4().hex[:6]
    api.create_namespace({"metadata": {"name": ns}})
    node = _gpu_pools(testbed)[0].node_names()[0]

    def operand(app):
        return {
            "metadata": {"name": "%s-x1" % app, "labels": {"app": app}},
            "spec": {
                "nodeName": node,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "main", "image": "registry.invalid/%s:1" % app}],
            },
        }

    for app in ("nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter"):
        api.create_namespaced_pod(ns, operand(app))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = api.list_namespaced_pod(ns).items
        if pods and all(p.status.phase == "Running" for p in pods):
            break
        time.sleep(0.5)
    try:
        yield ns, node
    finally:
        api.delete_namespace(ns)


def test_operand_pods_are_reported_on_their_node_by_component(run_info, operand_namespace):
    ns, node = operand_namespace
    result = run_info(operator_namespace=ns, node_detail="all")
    operands = result["nodes"][node]["operands"]
    assert set(operands) == {"device-plugin", "dcgm-exporter"}
    for summary in operands.values():
        assert summary["phase"] == "Running"
        assert summary["restarts"] == 0
    assert result["totals"]["operand_pods"] == 2


def test_check_mode_returns_the_same_view(run_info, default_run):
    result, _unused = default_run
    checked = run_info(check=True, node_detail="all")
    assert checked["changed"] is False
    assert set(checked["nodes"]) == set(result["nodes"])


def test_unknown_context_fails_naming_the_available_contexts(run_info, testbed):
    result = run_info(context="no-such-context")
    assert result["failed"] is True
    assert "context 'no-such-context' is not in kubeconfig" in result["msg"]
    assert testbed.sa_kubeconfig in result["msg"]


def test_unreachable_api_server_fails_after_bounded_retries(run_info, testbed, tmp_path):
    import yaml

    config = yaml.safe_load(Path(testbed.sa_kubeconfig).read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    result = run_info(kubeconfig=config, api_timeout=2)
    assert result["failed"] is True
    assert "cannot reach the Kubernetes API server https://127.0.0.1:1" in result["msg"]
