"""The operator_values filter: hostvars and pools in, the fleet plan out; bad input is an AnsibleFilterError."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.operator_values import FilterModule

flt = FilterModule().filters()["operator_values"]

HOSTVARS = {
    "gpu-a": {
        "k8s_node_name": "node-a",
        "gpu_pool": "h100",
        "ansible_facts": {"gpu_host": {"nvidia_driver": {"loaded": True}, "kubernetes": {"distribution": "k3s"}}},
    },
    "gpu-b": {"k8s_node_name": "node-b", "gpu_pool": "h100", "gpu_driver_preinstalled": False},
    "cp": {"k8s_node_name": "control-plane"},
}
POOLS = {"h100": {"taints": [{"key": "canary", "effect": "NoSchedule"}], "mig_config": "all-1g.10gb"}}


def test_the_named_gpu_hosts_only():
    out = flt(HOSTVARS, ["gpu-a", "gpu-b"], pools=POOLS)
    assert set(out["node_labels"]) == {"node-a"}  # node-b needs no label
    assert out["node_labels"]["node-a"]["nvidia.com/gpu.deploy.driver"] == "false"
    assert out["values"]["driver"] == {"enabled": True}
    assert out["values"]["toolkit"]["env"][0] == {
        "name": "CONTAINERD_CONFIG",
        "value": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
    }
    assert out["taints"] == [{"key": "canary", "effect": "NoSchedule"}]
    assert out["mig_configs"] == {"node-a": "all-1g.10gb", "node-b": "all-1g.10gb"}
    assert "nvidia.com/mig.config" not in out["node_labels"]["node-a"]  # applied once the MIG manager runs


def test_bad_input_is_a_filter_error_naming_it():
    with pytest.raises(AnsibleFilterError, match="operator_values: taint .* pool h100"):
        flt(HOSTVARS, ["gpu-a"], pools={"h100": {"taints": [{"effect": "NoSchedule"}]}})


def node(name, config=None, state=None):
    labels = {}
    if config:
        labels["nvidia.com/mig.config"] = config
    if state:
        labels["nvidia.com/mig.config.state"] = state
    return {"metadata": {"name": name, "labels": labels}}


def test_mig_states_sorts_nodes_by_the_mig_managers_state_for_the_wanted_layout():
    mig_states = FilterModule().filters()["mig_states"]
    nodes = [
        node("ok", "all-1g.10gb", "success"),
        node("bad", "all-1g.10gb", "failed"),
        node("busy", "all-1g.10gb", "pending"),
        node("stale", "all-disabled", "success"),  # success of the previous layout
    ]
    wanted = dict.fromkeys(("ok", "bad", "busy", "stale", "gone"), "all-1g.10gb")
    assert mig_states(nodes, wanted) == {"success": ["ok"], "failed": ["bad"], "pending": ["busy", "gone", "stale"]}
