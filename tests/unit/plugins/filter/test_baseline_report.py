"""The baseline_report filter: each host's baseline joined with the cluster checks, counts, verdict, Markdown."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_report import FilterModule

PASSED = {"results": [], "findings": [], "verdict": "pass"}


def node(name):
    return {
        "name": name,
        "gpu": True,
        "all_labels": {},
        "taints": [],
        "container_runtime_version": "containerd://2.1.4",
    }


def cluster(*names):
    """gpu_preflight_info's result for a healthy cluster with GPU nodes ``names``."""
    return {
        "kubernetes_version": {"git_version": "v1.36.3"},
        "nodes": {n: node(n) for n in names},
        "nfd": {"daemonsets": []},
        "crds": {"servicemonitors.monitoring.coreos.com": True},
        "runtime_class": {"exists": False},
        "namespace": {"exists": False},
        "cluster_policy": {"exists": False},
        "access": [{"identity": "automation", "checked": 3, "missing": []}],
    }


def baseline_report(hosts, cl, opts=None):
    return FilterModule().filters()["baseline_report"](hosts, cl, opts or {})


def test_hosts_with_a_passed_baseline_on_a_healthy_cluster_pass():
    rep = baseline_report(
        {"gpu-a": {"node_name": "node-a", "pool": "a100", "baseline": PASSED}, "gpu-b": {"baseline": PASSED}},
        cluster("node-a", "gpu-b"),
    )
    assert rep["verdict"] == "pass" and rep["counts"] == {"pass": 2, "warn": 0, "fail": 0}
    assert rep["hosts"]["gpu-a"]["node"] == "node-a" and rep["hosts"]["gpu-b"]["node"] == "gpu-b"
    assert rep["cluster"]["verdict"] == "pass" and rep["drift"] == []
    assert rep["lines"] == ["all 2 GPU host(s) pass the baseline"]
    assert rep["markdown"].startswith("# GPU baseline: PASS\n")
    assert "| gpu-a | node-a | a100 | pass | - |" in rep["markdown"]


def test_the_report_names_the_target_release_and_driver():
    rep = baseline_report({}, cluster(), {"operator_version": "v26.7.0", "driver_version": "580.173.02"})
    assert (rep["operator_version"], rep["release"], rep["driver_policy"], rep["target_driver"]) == (
        "v26.7.0",
        "26.7",
        "operator-managed",
        "580.173.02",
    )
    assert baseline_report({}, cluster(), {"driver_policy": "preinstalled"})["target_driver"] is None


def test_a_host_without_facts_fails_with_the_gathered_finding_only():
    rep = baseline_report({"gpu-a": {"baseline": PASSED}, "ghost": {}}, cluster("gpu-a", "ghost"))
    assert [f["id"] for f in rep["hosts"]["ghost"]["findings"]] == ["hosts.gathered"]
    assert rep["hosts"]["ghost"]["verdict"] == "fail" and rep["hosts"]["gpu-a"]["verdict"] == "pass"
    assert rep["verdict"] == "fail"


def test_a_cluster_finding_about_a_host_becomes_that_hosts_finding():
    rep = baseline_report({"gpu-a": {"baseline": PASSED}, "gpu-lost": {"baseline": PASSED}}, cluster("gpu-a"))
    lost = rep["hosts"]["gpu-lost"]
    assert lost["verdict"] == "fail" and [f["id"] for f in lost["findings"]] == ["nodes.mapped"]
    assert rep["counts"] == {"pass": 1, "warn": 0, "fail": 1}
    assert rep["lines"][0].startswith("gpu-lost: nodes.mapped [fail]: no Kubernetes node for: gpu-lost")
    assert "### gpu-lost (fail)" in rep["markdown"] and "Fix: Set the node name variable" in rep["markdown"]


def test_a_cluster_finding_about_no_host_is_a_cluster_line():
    cl = dict(cluster("gpu-a"), kubernetes_version={"git_version": "v1.31.4"})
    rep = baseline_report({"gpu-a": {"baseline": PASSED}}, cl)
    assert rep["hosts"]["gpu-a"]["verdict"] == "pass" and rep["verdict"] == "fail"
    assert rep["lines"][0].startswith("cluster: k8s.version [fail]: Kubernetes v1.31.4 is outside")


def test_a_host_with_facts_but_no_baseline_is_evaluated_here():
    rep = baseline_report({"gpu-a": {"gpu_host": {"nouveau": {"loaded": True}}}}, cluster("gpu-a"))
    assert "nouveau.loaded" in [f["id"] for f in rep["hosts"]["gpu-a"]["findings"]]
    assert rep["hosts"]["gpu-a"]["verdict"] == "fail"


def test_bad_options_fail_the_filter_naming_the_bad_input():
    with pytest.raises(AnsibleFilterError, match=r"gpu_baseline_severity names unknown check id\(s\): nope"):
        baseline_report({}, cluster(), {"severity": {"nope": "warn"}})
