"""The fleet_hosts filter: the GPU hosts of a fleet validation, joined with their node names, read from hostvars."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_hosts import FilterModule

NVML = {"available": True, "gpu_count": 8}
HOSTVARS = {
    "gpu-a": {"k8s_node_name": "node-a", "gpu_pool": "h100", "ansible_facts": {"nvidia_gpu": NVML}},
    "gpu-b": {"ansible_facts": {"gpu_host": {}}},
    "gpu-c": {"k8s_node_name": None, "ansible_facts": None},
}


def fleet_hosts(hosts, **kw):
    return FilterModule().filters()["fleet_hosts"](HOSTVARS, hosts, **kw)


def test_each_host_gets_its_node_name_pool_and_nvml_facts():
    assert fleet_hosts(["gpu-a"]) == {"gpu-a": {"node_name": "node-a", "pool": "h100", "nvidia_gpu": NVML}}


def test_a_host_without_facts_gets_facts_that_name_it_and_the_fix():
    out = fleet_hosts(["gpu-b"])["gpu-b"]
    assert (out["node_name"], out["pool"]) == ("gpu-b", None)
    assert out["nvidia_gpu"] == {
        "available": False,
        "reason": "no nvidia_gpu facts for gpu-b",
        "hint": "Run gpuops.gpu_operator.nvidia_gpu_facts on the GPU hosts before this role.",
    }


def test_a_host_outside_the_inventory_counts_as_a_host_without_variables():
    out = fleet_hosts(["ghost"])["ghost"]
    assert out["node_name"] == "ghost" and out["nvidia_gpu"]["available"] is False


def test_a_variable_set_to_null_stays_null_as_jinja_default_would_keep_it():
    out = fleet_hosts(["gpu-c"])["gpu-c"]
    assert out["node_name"] is None and out["nvidia_gpu"]["available"] is False


def test_the_hosts_keep_their_order_and_the_variable_names_are_configurable():
    assert list(fleet_hosts(["gpu-b", "gpu-a"])) == ["gpu-b", "gpu-a"]
    out = fleet_hosts(["gpu-a"], node_name_var="gpu_pool", pool_var="k8s_node_name")["gpu-a"]
    assert (out["node_name"], out["pool"]) == ("h100", "node-a")
