"""The audit_hosts and audit_cluster_results filters: the hosts and clusters options of gpu_audit_report."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.audit_cluster_results import FilterModule as Results
from ansible_collections.gpuops.gpu_operator.plugins.filter.audit_hosts import FilterModule as Hosts

FACTS = {"changed": False, "ansible_facts": {"gpu_host": {}}}
NVML = {"unreachable": True, "msg": "Failed to connect"}
HOSTVARS = {
    "e-0": {"k8s_node_name": "node-0", "gpu_pool": "h100", "__gpu_audit_host_facts_result": FACTS},
    "w-0": {"__gpu_audit_host_facts_result": FACTS, "__gpu_audit_nvml_result": NVML},
}
CLUSTERS = {
    "east": {"hosts": ["e-0"], "kubeconfig": "east.kc", "context": "east"},
    "west": {"hosts": ["w-0"], "kubeconfig": {"clusters": []}, "context": None},
    "lab": {"hosts": [], "kubeconfig": None, "context": None},
}


def test_every_host_of_every_cluster_with_its_node_pool_and_fact_results():
    assert Hosts().filters()["audit_hosts"](CLUSTERS, HOSTVARS) == {
        "e-0": {
            "cluster": "east",
            "node_name": "node-0",
            "pool": "h100",
            "host_facts_result": FACTS,
            "nvml_result": None,
        },
        "w-0": {"cluster": "west", "node_name": "w-0", "pool": None, "host_facts_result": FACTS, "nvml_result": NVML},
    }


def test_the_variable_names_are_configurable():
    out = Hosts().filters()["audit_hosts"](CLUSTERS, HOSTVARS, node_name_var="gpu_pool", nvml_var="k8s_node_name")
    assert (out["e-0"]["node_name"], out["e-0"]["nvml_result"]) == ("h100", "node-0")


def result(name, **kw):
    return dict(
        {"ansible_loop_var": "__item", "__item": name, "invocation": {"module_args": {"kubeconfig": "x"}}}, **kw
    )


def test_each_read_is_keyed_by_its_cluster_without_its_invocation():
    out = Results().filters()["audit_cluster_results"]([result("east", nodes={}), result("lab", failed=True)], CLUSTERS)
    assert out["east"] == {
        "result": {"ansible_loop_var": "__item", "__item": "east", "nodes": {}},
        "kubeconfig": "east.kc",
        "context": "east",
    }
    assert out["lab"] == {
        "result": {"ansible_loop_var": "__item", "__item": "lab", "failed": True},
        "kubeconfig": None,
        "context": None,
    }


def test_an_inline_kubeconfig_is_recorded_as_inline_never_copied():
    out = Results().filters()["audit_cluster_results"]([result("west")], CLUSTERS)
    assert out["west"]["kubeconfig"] == "(inline)"


def test_a_loop_without_a_loop_var_reads_item():
    out = Results().filters()["audit_cluster_results"]([{"item": "east", "nodes": {}}], CLUSTERS)
    assert list(out) == ["east"]
