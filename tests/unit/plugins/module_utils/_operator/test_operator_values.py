"""Specification of plugins/module_utils/_operator/values.py: chart values from host facts, inventory and cluster."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.values import (
    DRIVER_DEPLOY_LABEL,
    ValuesError,
    deep_merge,
    effective_values,
    fleet_plan,
    hosts_from_hostvars,
    with_tolerations,
)

CHART_DEFAULTS = {
    "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    "node-feature-discovery": {
        "worker": {
            "tolerations": [
                {
                    "key": "node-role.kubernetes.io/control-plane",
                    "operator": "Equal",
                    "value": "",
                    "effect": "NoSchedule",
                },
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            ]
        }
    },
    "nfd": {"enabled": True},
}


def host(node, distro="kubeadm", loaded=True, library="libnvidia-ml.so.1", **extra):
    facts = {"kubernetes": {"distribution": distro}, "nvidia_driver": {"loaded": loaded}}
    return {"node": node, "gpu_host": facts, "nvidia_gpu": {"library_path": library}, **extra}


OPERATOR_DRIVER = "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"


class TestDriver:
    def test_every_host_with_a_preinstalled_driver_disables_the_operator_driver(self):
        plan = fleet_plan([host("a"), host("b")])
        assert plan["values"]["driver"] == {"enabled": False}
        assert plan["node_labels"]["a"][DRIVER_DEPLOY_LABEL] == "false"

    def test_a_mixed_fleet_keeps_the_driver_and_labels_only_preinstalled_hosts(self):
        plan = fleet_plan(
            [host("host-driver"), host("op-driver", loaded=False), host("op-root", library=OPERATOR_DRIVER)]
        )
        assert plan["values"]["driver"] == {"enabled": True}
        assert plan["node_labels"] == {"host-driver": {DRIVER_DEPLOY_LABEL: "false"}}
        assert any("mixed fleet" in r and "host-driver" in r for r in plan["reasons"])

    def test_the_inventory_override_beats_the_facts(self):
        plan = fleet_plan([host("a", driver_preinstalled=False)])
        assert plan["values"]["driver"] == {"enabled": True}
        assert "a" not in plan["node_labels"]

    def test_hosts_without_facts_need_the_operator_driver_and_say_so(self):
        plan = fleet_plan([{"node": "a"}, host("b")])
        assert plan["values"]["driver"] == {"enabled": True}
        assert any("no driver facts for a" in r for r in plan["reasons"])

    def test_a_host_without_a_node_name_is_an_error_naming_the_variable(self):
        with pytest.raises(ValuesError, match="k8s_node_name"):
            fleet_plan([{"pool": "p"}])


class TestToolkitEnv:
    @pytest.mark.parametrize(
        "distro, config, socket",
        [
            ("k3s", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "/run/k3s/containerd/containerd.sock"),
            (
                "rke2",
                "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
                "/run/k3s/containerd/containerd.sock",
            ),
            (
                "microk8s",
                "/var/snap/microk8s/current/args/containerd-template.toml",
                "/var/snap/microk8s/common/run/containerd.sock",
            ),
            ("k0s", "/etc/k0s/containerd.d/nvidia.toml", "/run/k0s/containerd.sock"),
        ],
    )
    def test_the_distributions_containerd_config_and_socket(self, distro, config, socket):
        env = {e["name"]: e["value"] for e in fleet_plan([host("a", distro)])["values"]["toolkit"]["env"]}
        assert env["CONTAINERD_CONFIG"] == config
        assert env["CONTAINERD_SOCKET"] == socket

    def test_microk8s_also_points_the_runtime_config_source_at_its_file(self):
        env = {e["name"]: e["value"] for e in fleet_plan([host("a", "microk8s")])["values"]["toolkit"]["env"]}
        assert env["RUNTIME_CONFIG_SOURCE"] == "file=/var/snap/microk8s/current/args/containerd.toml"

    def test_kubeadm_with_stock_containerd_needs_nothing(self):
        assert "toolkit" not in fleet_plan([host("a")])["values"]

    def test_different_distributions_leave_toolkit_env_to_the_user_with_the_reason(self):
        plan = fleet_plan([host("a", "k3s"), host("b", "rke2")])
        assert "toolkit" not in plan["values"]
        assert any("different distributions" in r and "k3s: a" in r for r in plan["reasons"])


class TestInventory:
    def test_pool_labels_taints_and_mig_config_and_host_additions(self):
        pools = {
            "h100": {
                "labels": {"gpuops.io/pool": "h100"},
                "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                "mig_config": "all-1g.10gb",
            }
        }
        plan = fleet_plan(
            [
                host("a", pool="h100", driver_preinstalled=False),
                host(
                    "b",
                    pool="h100",
                    driver_preinstalled=False,
                    mig_config="all-disabled",
                    taints=[{"key": "canary", "effect": "NoExecute"}],
                ),
            ],
            pools,
        )
        assert plan["node_labels"]["a"] == {"gpuops.io/pool": "h100"}
        assert plan["mig_configs"] == {"a": "all-1g.10gb", "b": "all-disabled"}
        assert plan["node_taints"]["b"] == [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": "canary", "effect": "NoExecute"},
        ]
        assert plan["taints"] == plan["node_taints"]["b"]  # distinct over the fleet

    def test_a_taint_with_a_bad_effect_names_the_pool_and_the_choices(self):
        with pytest.raises(ValuesError, match="pool p.*NoSchedule, PreferNoSchedule, NoExecute"):
            fleet_plan([host("a", pool="p")], {"p": {"taints": [{"key": "k", "effect": "Never"}]}})

    def test_hosts_from_hostvars_reads_facts_and_inventory_variables(self):
        hostvars = {
            "gpu-1": {
                "k8s_node_name": "node-1",
                "gpu_pool": "t4",
                "ansible_facts": {"gpu_host": {"nvidia_driver": {"loaded": False}}},
            }
        }
        [h] = hosts_from_hostvars(hostvars, ["gpu-1"])
        assert (h["node"], h["pool"], h["gpu_host"]["nvidia_driver"]["loaded"]) == ("node-1", "t4", False)


class TestEffectiveValues:
    def test_custom_taints_are_tolerated_on_top_of_the_chart_defaults(self):
        taints = [{"key": "canary", "value": "true", "effect": "NoSchedule"}]
        values, _reasons = effective_values(CHART_DEFAULTS, {}, {"taints": taints})
        ds = values["daemonsets"]["tolerations"]
        assert ds[0] == CHART_DEFAULTS["daemonsets"]["tolerations"][0]
        assert ds[1] == {"key": "canary", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        nfd = values["node-feature-discovery"]["worker"]["tolerations"]
        assert len(nfd) == 3 and nfd[-1]["key"] == "canary"

    def test_a_taint_already_tolerated_by_the_chart_adds_nothing(self):
        tols = with_tolerations(
            CHART_DEFAULTS["daemonsets"]["tolerations"], [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
        )
        assert tols == CHART_DEFAULTS["daemonsets"]["tolerations"]

    def test_the_users_toleration_list_wins_whole(self):
        mine = [{"operator": "Exists"}]
        values, _reasons = effective_values(
            CHART_DEFAULTS, {"daemonsets": {"tolerations": mine}}, {"taints": [{"key": "c"}]}
        )
        assert values["daemonsets"]["tolerations"] == mine

    def test_nfd_is_disabled_when_nodes_already_carry_nfd_labels(self):
        values, reasons = effective_values(CHART_DEFAULTS, {}, cluster={"nfd_labels": True})
        assert values["nfd"] == {"enabled": False}
        assert any("NFD labels" in r for r in reasons)

    def test_nfd_stays_as_deployed_once_our_own_nfd_labels_the_nodes(self):
        values, _reasons = effective_values(
            CHART_DEFAULTS, {}, cluster={"nfd_labels": True}, deployed_values={"nfd": {"enabled": True}}
        )
        assert values["nfd"] == {"enabled": True}

    def test_an_installed_release_without_an_nfd_value_keeps_the_chart_default(self):
        values, _reasons = effective_values(CHART_DEFAULTS, {}, cluster={"nfd_labels": True}, deployed_values={})
        assert "nfd" not in values

    def test_no_nfd_labels_leaves_the_chart_default(self):
        values, _reasons = effective_values(CHART_DEFAULTS, {}, cluster={"nfd_labels": False})
        assert "nfd" not in values

    @pytest.mark.parametrize("crd", [True, False])
    def test_the_service_monitor_follows_its_crd(self, crd):
        values, _reasons = effective_values(CHART_DEFAULTS, {}, cluster={"service_monitor_crd": crd})
        assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is crd

    def test_explicit_user_values_always_win_and_the_override_is_reported(self):
        fleet = {"values": {"driver": {"enabled": False}, "toolkit": {"env": [{"name": "X", "value": "1"}]}}}
        user = {
            "driver": {"enabled": True, "version": "580.126.20"},
            "dcgmExporter": {"serviceMonitor": {"enabled": True}},
        }
        values, reasons = effective_values(
            CHART_DEFAULTS, user, fleet, {"service_monitor_crd": False, "nfd_labels": True}
        )
        assert values["driver"] == {"enabled": True, "version": "580.126.20"}
        assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is True
        assert values["toolkit"]["env"] == [{"name": "X", "value": "1"}]
        assert values["nfd"] == {"enabled": False}
        assert any(
            "override" in r and "driver.enabled" in r and "dcgmExporter.serviceMonitor.enabled" in r for r in reasons
        )

    def test_deep_merge_merges_dicts_and_replaces_lists(self):
        assert deep_merge({"a": {"b": 1, "l": [1]}}, {"a": {"c": 2, "l": [2]}}) == {"a": {"b": 1, "c": 2, "l": [2]}}
