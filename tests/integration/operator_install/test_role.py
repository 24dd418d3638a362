"""The gpu_operator_install role on the real test bed: facts from the fake GPU hosts, node pools with a custom
taint and a MIG layout, a mixed driver fleet; idempotent; check mode writes nothing. Run by ansible-playbook as the
least-privilege identity; the admin identity only inspects and cleans up."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from operator_install_helpers import NS

from tests.integration.helpers import wait_for

TAINT = {"key": "gpuops.io/dedicated", "value": "gpu", "effect": "NoSchedule"}
POOLS = {"h100": {"labels": {"gpuops.io/pool": "h100"}, "taints": [TAINT], "mig_config": "all-1g.10gb"}}

PLAYBOOK = """
- name: Gather GPU host facts
  hosts: gpu_hosts
  gather_facts: false
  tasks:
    - name: Host facts from the fake host tree
      gpuops.gpu_operator.gpu_host_facts:
        host_root: "{{ gpu_host_root }}"

- name: Install the GPU Operator
  hosts: k8s_cluster
  gather_facts: false
  roles:
    - role: gpuops.gpu_operator.gpu_operator_install
      vars:
        gpu_operator_install_chart_repo_url: "{{ gpuops_chart_repo_url }}"
        gpu_operator_install_chart_version: "{{ chart_version }}"
        gpu_operator_install_kubeconfig: "{{ gpuops_kubeconfig }}"
        gpu_operator_install_helm_binary: "{{ helm_binary }}"
        gpu_operator_install_pools: "{{ pools }}"
        gpu_operator_install_timeout: 120
        gpu_operator_install_ready_timeout: 120
        gpu_operator_install_mig_timeout: 60
"""


@pytest.fixture(scope="module")
def role(bed, testbed):
    """run(check=False, version="v26.3.3") -> (rc, recap changed count, stdout); cleans the nodes afterwards."""
    inventory = bed.work / "inventory.yml"
    proc = testbed.cli("inventory")
    assert proc.returncode == 0, proc.stderr
    inventory.write_text(proc.stdout)
    inv = yaml.safe_load(proc.stdout)
    gpu_hosts = inv["all"]["children"]["gpu_hosts"]["hosts"]
    h100 = sorted(h for h, v in gpu_hosts.items() if v["gpu_pool"] == "h100")
    # one H100 host says its driver comes from the operator: a mixed fleet
    override = bed.work / "override.yml"
    override.write_text(yaml.safe_dump({"gpu_hosts": {"hosts": {h100[0]: {"gpu_driver_preinstalled": False}}}}))
    playbook = bed.work / "role.yml"
    playbook.write_text(PLAYBOOK)

    def run(check=False, version="v26.3.3"):
        extra = {"chart_version": version, "helm_binary": testbed.helm, "pools": POOLS}
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-i", str(override)]
        cmd += [str(playbook), "-e", json.dumps(extra)] + (["--check"] if check else [])
        p = subprocess.run(cmd, capture_output=True, text=True, env=bed.ansible_env(), timeout=900, check=False)
        changed = sum(int(n) for n in re.findall(r"^localhost\s*:.*?changed=(\d+)", p.stdout, re.M))
        return p.returncode, changed, p.stdout + p.stderr

    run.nodes = {h: v["k8s_node_name"] for h, v in gpu_hosts.items()}
    run.h100 = [gpu_hosts[h]["k8s_node_name"] for h in h100]
    run.override_node = gpu_hosts[h100[0]]["k8s_node_name"]
    try:
        yield run
    finally:
        for node in run.nodes.values():
            obj = bed.core.read_node(node)
            taints = [t for t in obj.spec.taints or [] if t.key != TAINT["key"]]
            labels = dict.fromkeys(("gpuops.io/pool", "nvidia.com/gpu.deploy.driver", "nvidia.com/mig.config"))
            bed.core.patch_node(node, {"metadata": {"labels": labels}, "spec": {"taints": taints}})
        # Leave whole GPUs advertised again (the MIG layout split them) for the test directories after this one.
        for node in run.nodes.values():
            wait_for(lambda n=node: _whole_gpus_advertised(bed.core.read_node(n)), timeout=90, what=f"{node} GPUs")


def _whole_gpus_advertised(node):
    count = (node.metadata.annotations or {}).get("sim.gpuops.io/gpu-count")
    alloc = node.status.allocatable or {}
    return alloc.get("nvidia.com/gpu") == count and not any(k.startswith("nvidia.com/mig-") for k in alloc)


@pytest.fixture(scope="module")
def converged(role):
    rc, changed, out = role()
    assert rc == 0, out[-4000:]
    return changed, out


def test_the_first_run_installs_and_changes_things(converged):
    changed, _out = converged
    assert changed > 0


def test_the_namespace_has_the_podsecurity_privileged_labels(bed, converged):
    labels = bed.core.read_namespace(NS).metadata.labels
    for mode in ("enforce", "audit", "warn"):
        assert labels["pod-security.kubernetes.io/%s" % mode] == "privileged"


def test_pool_labels_and_taints_are_on_the_pools_nodes_only(bed, role, converged):
    for node in role.nodes.values():
        obj = bed.core.read_node(node)
        in_pool = node in role.h100
        assert (obj.metadata.labels.get("gpuops.io/pool") == "h100") is in_pool
        has_taint = any(t.key == TAINT["key"] and t.value == "gpu" for t in obj.spec.taints or [])
        assert has_taint is in_pool


def test_a_mixed_fleet_keeps_the_operator_driver_off_preinstalled_hosts_only(bed, role, converged):
    values = bed.release_values()
    assert values["driver"]["enabled"] is True
    for node in role.nodes.values():
        label = bed.core.read_node(node).metadata.labels.get("nvidia.com/gpu.deploy.driver")
        # the fake host trees have a host driver loaded; the override host says it has none
        assert (label == "false") is (node != role.override_node), node


def test_operands_tolerate_the_custom_taint_and_the_cluster_policy_is_ready(bed, converged):
    cp = bed.cluster_policy()
    assert TAINT["key"] in [t.get("key") for t in cp["spec"]["daemonsets"]["tolerations"]]
    assert "nvidia.com/gpu" in [t.get("key") for t in cp["spec"]["daemonsets"]["tolerations"]]  # chart default kept
    nfd = bed.release_values().get("node-feature-discovery", {}).get("worker", {}).get("tolerations", [])
    assert TAINT["key"] in [t.get("key") for t in nfd]
    assert cp["status"]["state"] == "ready"  # operand pods scheduled on the tainted nodes


def test_the_mig_layout_is_applied_and_reported_success(bed, role, converged):
    for node in role.h100:
        labels = bed.core.read_node(node).metadata.labels
        assert labels["nvidia.com/mig.config"] == "all-1g.10gb"
        assert labels["nvidia.com/mig.config.state"] == "success"


def test_a_second_run_changes_nothing(role, converged):
    rc, changed, out = role()
    assert rc == 0, out[-3000:]
    assert changed == 0, out[-4000:]


def test_check_mode_of_an_upgrade_writes_nothing(bed, role, converged):
    mark = bed.mark()
    rc, changed, out = role(check=True, version="v26.7.0")
    assert rc == 0, out[-3000:]
    assert "upgrade: v26.3.3 -> v26.7.0" in out  # the role's plan line: action, from and to
    # kubernetes.core's check mode asks the API server for dry runs of the node and namespace patches; nothing else
    assert bed.persisted_writes_since(mark) == []
    assert bed.release()["version"] == "v26.3.3"
