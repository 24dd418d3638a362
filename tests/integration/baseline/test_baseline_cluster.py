# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The gpu_baseline cluster side against the real test bed: gpu_preflight_info run by ansible-playbook as the
least-privilege identity (and as a deliberately weaker one), the cluster checks over what it read, and the
whole role over the test bed's inventory plus a host that has no node."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import evaluate_cluster
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import options
from tests.integration.helpers import collection_env, module_runner
from tests.sim import profiles
from tests.sim import testbed as tb

REPO_ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

ROLE_PLAY = """
- name: Baseline host part
  hosts: gpu_hosts
  gather_facts: false
  tasks:
    - name: Host checks
      ansible.builtin.include_role:
        name: gpuops.gpu_operator.gpu_baseline
      vars:
        gpu_baseline_driver_policy: preinstalled
        gpu_baseline_host_root: "{{ gpu_host_root }}"
        gpu_baseline_nvml_library: "%(nvml)s"
        gpu_baseline_nvml_environment: {GPUOPS_FAKE_NVML_FIXTURE: "{{ gpu_nvml_fixture }}"}

- name: Baseline cluster part
  hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: Cluster checks and report
      ansible.builtin.include_role:
        name: gpuops.gpu_operator.gpu_baseline
        tasks_from: cluster
      vars:
        gpu_baseline_driver_policy: preinstalled
        gpu_baseline_kubeconfig: "{{ gpuops_kubeconfig }}"
        gpu_baseline_install_kubeconfig: "{{ gpuops_admin_kubeconfig }}"
        gpu_baseline_report_dir: "%(reports)s"
        gpu_baseline_report_in_check_mode: true
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("baseline")


@pytest.fixture(scope="module")
def preflight(testbed, workdir):
    """preflight(check=False, **module_args) -> gpu_preflight_info's registered result."""
    return module_runner(testbed, workdir, "gpu_preflight_info")


def _rbac_permissions():
    """What the role checks by default for the automation identity (roles/gpu_baseline/defaults)."""
    defaults = yaml.safe_load((REPO_ROOT / "roles/gpu_baseline/defaults/main.yml").read_text())
    perms = []
    for p in defaults["gpu_baseline_required_permissions"]:
        p = dict(p)
        if "namespace" in p:
            p["namespace"] = "gpu-operator"
        perms.append(p)
    return perms


def test_preflight_reads_the_test_bed_as_the_automation_identity_in_a_few_requests(testbed, preflight):
    mark = testbed.audit_mark()
    result = preflight(check=True, permissions=_rbac_permissions())
    assert not result.get("failed"), result.get("msg")
    assert result["kubernetes_version"]["git_version"].startswith("v1.36")
    prof = profiles.load(testbed.profile)
    names = {n for pool in prof.pools for n in pool.node_names()}
    assert set(result["nodes"]) == names
    gpu_names = {n for pool in prof.pools if pool.gpu for n in pool.node_names()}
    assert {n for n, v in result["nodes"].items() if v["gpu"]} == gpu_names
    assert result["access"] == [{"identity": "automation", "checked": len(_rbac_permissions()), "missing": []}]
    assert result["runtime_class"]["name"] == "nvidia"
    assert result["crds"]["servicemonitors.monitoring.coreos.com"] is False
    # Fixed number of GETs whatever the node count: version, nodes, NFD DaemonSets, 4 discovery, RuntimeClass,
    # namespace, ClusterPolicies, NVIDIADrivers, GPUClusters (no ClusterPolicy) and, with no operator to name its
    # namespace, its pods.
    assert result["api_requests"] == 13
    assert result["operator"]["namespace"] == "gpu-operator" and result["operator"]["namespace_source"] == "default"
    assert result["operator"]["mode"] is None  # no operator installed yet
    time.sleep(1.0)
    writes = testbed.audit_writes(mark)
    assert {w["objectRef"]["resource"] for w in writes} <= {"selfsubjectaccessreviews"}, writes


@pytest.fixture
def weak_kubeconfig(testbed, tmp_path):
    """A service account that may only list nodes and ask about its own permissions; removed afterwards."""
    from kubernetes import client

    api = testbed.api_client()
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    name = "baseline-weak-%s" % uuid.uuid4().hex[:6]
    core.create_namespaced_service_account(tb.SA_NAMESPACE, {"metadata": {"name": name}})
    rbac.create_cluster_role(
        {
            "metadata": {"name": name},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]},
            ],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": tb.SA_NAMESPACE}],
        }
    )
    token = core.create_namespaced_service_account_token(
        name, tb.SA_NAMESPACE, {"spec": {"audiences": [], "expirationSeconds": 3600}}
    ).status.token
    admin = yaml.safe_load(Path(testbed.kubeconfig).read_text())
    cluster = admin["clusters"][0]["cluster"]
    path = tmp_path / "weak-kubeconfig"
    tb._kubeconfig(path, cluster["server"], cluster["certificate-authority"], {"token": token}, name)
    try:
        yield str(path)
    finally:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)
        core.delete_namespaced_service_account(name, tb.SA_NAMESPACE)


def test_a_weaker_identity_gets_each_missing_permission_listed(preflight, weak_kubeconfig):
    perms = [
        {"verb": "list", "resource": "nodes"},
        {"verb": "patch", "resource": "nodes"},
        {"verb": "create", "resource": "pods", "namespace": "gpu-operator"},
        {"verb": "create", "resource": "customresourcedefinitions", "group": "apiextensions.k8s.io"},
    ]
    result = preflight(kubeconfig=weak_kubeconfig, sections=["nodes", "access"], identity="weak", permissions=perms)
    assert not result.get("failed"), result.get("msg")
    access = result["access"][0]
    assert access["identity"] == "weak" and access["checked"] == 4
    assert [(m["verb"], m["resource"], m["namespace"]) for m in access["missing"]] == [
        ("patch", "nodes", None),
        ("create", "pods", "gpu-operator"),
        ("create", "customresourcedefinitions", None),
    ]
    r = next(x for x in evaluate_cluster(result, {}, options({}))["results"] if x["id"] == "rbac.permissions")
    assert r["status"] == "fail"
    assert "weak: patch nodes" in r["evidence"] and "weak: create pods in namespace gpu-operator" in r["evidence"]


def test_a_weaker_identity_cannot_read_what_it_lacks_and_the_error_says_so(preflight, weak_kubeconfig):
    proc_result = preflight(kubeconfig=weak_kubeconfig, sections=["namespace"])
    assert proc_result["failed"] and "403" in proc_result["msg"]


@pytest.fixture
def faulty_cluster(testbed):
    """Real objects that trip cluster checks: a RuntimeClass with the wrong handler, a cordoned GPU node, one in
    upgrade-failed, a restricted operator namespace, an NFD DaemonSet elsewhere. All removed afterwards."""
    from kubernetes import client

    api = testbed.api_client()
    core, apps, node_api = client.CoreV1Api(api), client.AppsV1Api(api), client.NodeV1Api(api)
    prof = profiles.load(testbed.profile)
    gpu_nodes = [n for pool in prof.pools if pool.gpu for n in pool.node_names()]
    cordoned, failed = gpu_nodes[0], gpu_nodes[1]
    node_api.create_runtime_class({"metadata": {"name": "nvidia"}, "handler": "runc"})
    core.patch_node(cordoned, {"spec": {"unschedulable": True}})
    core.patch_node(failed, {"metadata": {"labels": {"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"}}})
    restricted = {"pod-security.kubernetes.io/enforce": "restricted"}
    existed = "gpu-operator" in {n.metadata.name for n in core.list_namespace().items}
    if existed:
        core.patch_namespace("gpu-operator", {"metadata": {"labels": restricted}})
    else:
        core.create_namespace({"metadata": {"name": "gpu-operator", "labels": restricted}})
    core.create_namespace({"metadata": {"name": "nfd"}})
    labels = {"app.kubernetes.io/name": "node-feature-discovery"}
    apps.create_namespaced_daemon_set(
        "nfd",
        {
            "metadata": {"name": "nfd-worker", "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"gpuops.io/never": "true"},
                        "containers": [
                            {"name": "worker", "image": "registry.k8s.io/nfd/node-feature-discovery:v0.18.2"}
                        ],
                    },
                },
            },
        },
    )
    try:
        yield {"cordoned": cordoned, "failed": failed}
    finally:
        node_api.delete_runtime_class("nvidia")
        core.patch_node(cordoned, {"spec": {"unschedulable": False}})
        core.patch_node(failed, {"metadata": {"labels": {"nvidia.com/gpu-driver-upgrade-state": None}}})
        core.delete_namespace("nfd")
        if existed:
            core.patch_namespace("gpu-operator", {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": None}}})
        else:
            core.delete_namespace("gpu-operator")
        gone = {"nfd"} if existed else {"nfd", "gpu-operator"}
        for _attempt in range(60):  # namespaces terminate asynchronously; the next test may create them again
            if not {n.metadata.name for n in core.list_namespace().items} & gone:
                break
            time.sleep(0.5)


def test_cluster_checks_trip_on_real_objects(preflight, faulty_cluster):
    result = preflight(check=True)
    assert not result.get("failed"), result.get("msg")
    got = {r["id"]: r for r in evaluate_cluster(result, {}, options({}))["results"]}
    assert got["runtimeclass.nvidia"]["status"] == "fail" and "handler runc" in got["runtimeclass.nvidia"]["evidence"]
    assert got["nodes.cordoned"]["status"] == "fail" and got["nodes.cordoned"]["subjects"] == [
        faulty_cluster["cordoned"]
    ]
    assert got["nodes.upgrade_failed"]["subjects"] == [faulty_cluster["failed"]]
    assert got["namespace.podsecurity"]["status"] == "fail" and "restricted" in got["namespace.podsecurity"]["evidence"]
    assert got["nfd.existing"]["status"] == "fail" and "nfd/nfd-worker" in got["nfd.existing"]["evidence"]


def test_the_role_reports_a_host_without_a_node_and_one_whose_kernel_module_and_nvml_disagree(testbed, workdir):
    """The whole role over the test bed's inventory (every host's kernel module is its NVML's driver) plus one host
    whose node does not exist and one that loads kernel module 550.127.05 under an NVML of 570.124.06 - the classic
    "Driver/library version mismatch" of a driver upgraded without a reboot."""
    inv = yaml.safe_load(testbed.cli("inventory").stdout)
    hosts = inv["all"]["children"]["gpu_hosts"]["hosts"]
    first = next(iter(hosts.values()))
    hosts["ghost-0"] = dict(first, k8s_node_name="ghost-0")
    hosts["mismatch-0"] = dict(
        first,
        gpu_host_root=str(REPO_ROOT / "tests/sim/hosts/ubuntu2204-kubeadm-containerd"),  # loads 550.127.05
        gpu_nvml_fixture=str(REPO_ROOT / "tests/sim/nvml/profiles/h100-sxm-8.yml"),  # reports 570.124.06
    )
    inv_path = workdir / "inventory.yml"
    inv_path.write_text(yaml.safe_dump(inv))
    reports = workdir / "reports"
    play = workdir / "role.yml"
    play.write_text(ROLE_PLAY % {"nvml": REPO_ROOT / "build/nvml/libnvidia-ml.so.1", "reports": reports})
    mark = testbed.audit_mark()
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inv_path), str(play), "--check"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=collection_env(workdir), timeout=600, check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "GPU baseline fail (fail_on=fail): ghost-0, mismatch-0" in proc.stdout
    report = json.loads((reports / "baseline.json").read_text())

    def failed(host):
        return [f for f in report["hosts"][host]["findings"] if f["severity"] == "fail"]

    assert report["hosts"]["ghost-0"]["verdict"] == "fail"
    assert [f["id"] for f in failed("ghost-0")] == ["nodes.mapped"]
    assert [(f["id"], f["evidence"]) for f in failed("mismatch-0")] == [
        (
            "driver.library_mismatch",
            "Driver/library version mismatch: the loaded kernel module (/proc/driver/nvidia/version) is 550.127.05, "
            "NVML's driver is 570.124.06, the user-space library (NVML 12.570.124.06) is 570.124.06",
        )
    ]
    assert failed("mismatch-0")[0]["fix"].startswith("Load driver 570.124.06 kernel module")
    assert all(
        row["verdict"] != "fail" for name, row in report["hosts"].items() if name[:-2] not in {"ghost", "mismatch"}
    )
    md = (reports / "baseline.md").read_text()
    assert "### ghost-0 (fail)" in md and "no Kubernetes node for: ghost-0 (node ghost-0)" in md
    time.sleep(1.0)
    writes = testbed.audit_writes(mark)
    assert {w["objectRef"]["resource"] for w in writes} <= {"selfsubjectaccessreviews"}, writes
