"""The baseline_inventory filter: the GPU hosts of the baseline report, read from hostvars."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_inventory import FilterModule

LABELS = {"feature.node.kubernetes.io/pci-10de.present": "true"}
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
RESULT = {"results": [], "findings": [], "verdict": "pass"}
HOSTVARS = {
    "gpu-a": {
        "k8s_node_name": "node-a",
        "gpu_pool": "h100",
        "ansible_facts": {"gpu_host": {"os": {"id": "ubuntu"}}, "nvidia_gpu": {"available": True}},
        "gpu_baseline_host_result": RESULT,
    },
    "gpu-b": {"gpu_baseline_gpu_node_labels": {"pool": "b"}, "gpu_baseline_gpu_node_taints": [TAINT]},
    "cpu-0": {"k8s_node_name": "cpu-0"},
}


def baseline_inventory(hosts, **kw):
    return FilterModule().filters()["baseline_inventory"](HOSTVARS, hosts, **kw)


def test_each_gpu_host_gets_its_node_pool_facts_and_own_result():
    out = baseline_inventory(["gpu-a"], gpu_node_labels=LABELS)
    assert out == {
        "gpu-a": {
            "node_name": "node-a",
            "pool": "h100",
            "gpu_host": {"os": {"id": "ubuntu"}},
            "nvidia_gpu": {"available": True},
            "gpu_node_labels": LABELS,
            "gpu_node_taints": [],
            "baseline": RESULT,
        }
    }


def test_a_host_without_variables_or_facts_is_named_after_itself_and_has_empty_facts():
    out = baseline_inventory(["gpu-b"])["gpu-b"]
    assert out["node_name"] == "gpu-b" and out["pool"] is None and out["baseline"] is None
    assert out["gpu_host"] == {} and out["nvidia_gpu"] == {}


def test_only_the_hosts_asked_for_are_read():
    assert sorted(baseline_inventory(["gpu-b", "gpu-a"])) == ["gpu-a", "gpu-b"]


def test_the_node_name_and_pool_variables_are_configurable():
    out = baseline_inventory(["gpu-a"], node_name_var="gpu_pool", pool_var="k8s_node_name")["gpu-a"]
    assert (out["node_name"], out["pool"]) == ("h100", "node-a")


def test_a_hosts_own_labels_and_taints_win_over_the_ones_given():
    out = baseline_inventory(["gpu-a", "gpu-b"], gpu_node_labels=LABELS, gpu_node_taints=[])
    assert out["gpu-a"]["gpu_node_labels"] == LABELS and out["gpu-a"]["gpu_node_taints"] == []
    assert out["gpu-b"]["gpu_node_labels"] == {"pool": "b"} and out["gpu-b"]["gpu_node_taints"] == [TAINT]
