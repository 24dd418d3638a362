# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Specification of the baseline's DRA prerequisites (plugins/module_utils/_workflows/baseline/dra_checks.py) beyond
the pass/fail/unknown tables of test_baseline.py: they run in GPUCluster mode only, name their layer, share the
gpu_operator gate's minimums and read the driver as the gate does; the report names the release's DRA driver."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.modes import (
    GPUCLUSTER_MIN_DRIVER,
    GPUCLUSTER_MIN_KUBERNETES,
    mode_gate,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.dra_checks import RESOURCE_API
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import (
    evaluate_cluster,
    evaluate_host,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import BaselineError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import options
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.report import markdown, report
from tests.unit.plugins.module_utils._workflows.test_baseline import (
    CONTAINERD_CONFIG,
    GC,
    NVRM,
    OM,
    PRE,
    by_id,
    cluster,
    facts,
    gpu_hosts,
    host_ctx,
    nvml,
    tree,
)

DRA_IDS = {"dra.kubernetes_version", "dra.api_served", "dra.driver_version", "dra.cdi_enabled"}
UBUNTU = "ubuntu2204-kubeadm-containerd"


def ids(results):
    return {r["id"] for r in results}


@pytest.mark.parametrize("mode", [None, "clusterpolicy", "nvidiadriver"])
def test_outside_gpucluster_mode_the_dra_checks_are_absent_from_the_results(mode):
    opts = options(dict(PRE, operator_mode=mode))
    host = evaluate_host(host_ctx(facts(UBUNTU)), opts)["results"]
    cl = evaluate_cluster(cluster(kubernetes_version={"git_version": "v1.31.4"}), gpu_hosts(), opts)["results"]
    assert not ids(host + cl) & DRA_IDS
    assert not any("layer" in r for r in host + cl)


def test_in_gpucluster_mode_each_dra_check_runs_and_names_its_layer():
    opts = options(GC)
    host = evaluate_host(host_ctx(facts(UBUNTU)), opts)["results"]
    cl = evaluate_cluster(cluster(crds={RESOURCE_API: True}), gpu_hosts(), opts)["results"]
    layers = {r["id"]: r["layer"] for r in host + cl if "layer" in r}
    assert layers == {
        "dra.kubernetes_version": "dra",
        "dra.api_served": "dra",
        "dra.driver_version": "driver",
        "dra.cdi_enabled": "toolkit",
    }


def test_a_skipped_dra_check_keeps_its_layer():
    r = by_id(
        evaluate_host(host_ctx(facts(UBUNTU)), options(dict(GC, skip=["dra.cdi_enabled"])))["results"],
        "dra.cdi_enabled",
    )
    assert (r["status"], r["layer"]) == ("skipped", "toolkit")


def test_gpucluster_mode_on_a_release_without_it_or_an_unknown_mode_is_an_error_naming_the_fix():
    with pytest.raises(BaselineError, match="operator v26.3.3 has no GPUCluster mode.*v26.7.0 or later"):
        options(dict(GC, operator_version="v26.3.3"))
    with pytest.raises(BaselineError, match="gpu_baseline_operator_mode is 'dra'; use one of clusterpolicy"):
        options(dict(GC, operator_mode="dra"))


# -- Kubernetes and the API ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version, status", [("v1.33.5", "fail"), ("v1.34.1", "fail"), ("v1.34.2", "pass"), ("v1.36.3", "pass")]
)
def test_kubernetes_passes_from_the_gates_minimum(version, status):
    r = by_id(
        evaluate_cluster(cluster(kubernetes_version={"git_version": version}), gpu_hosts(), options(GC))["results"],
        "dra.kubernetes_version",
    )
    assert r["status"] == status
    refusals, _warnings = mode_gate("gpucluster", None, version, [], {})
    assert bool(refusals) == (status == "fail"), "the baseline and the gpu_operator gate must agree"


def test_a_kubernetes_too_old_names_the_minimum_and_the_dra_driver():
    r = by_id(
        evaluate_cluster(cluster(kubernetes_version={"git_version": "v1.33.5"}), gpu_hosts(), options(GC))["results"],
        "dra.kubernetes_version",
    )
    assert "older than %s" % ".".join(map(str, GPUCLUSTER_MIN_KUBERNETES)) in r["evidence"]
    assert "DRA driver v0.5.0" in r["evidence"] and "mode clusterpolicy" in r["fix"]


@pytest.mark.parametrize(
    "check_id, over", [("dra.kubernetes_version", {"kubernetes_version": {}}), ("dra.api_served", {"crds": {}})]
)
def test_a_cluster_fact_not_read_is_an_unknown_warn_not_a_pass_or_a_fail(check_id, over):
    r = by_id(evaluate_cluster(cluster(**over), gpu_hosts(), options(GC))["results"], check_id)
    assert (r["status"], r["severity"]) == ("fail", "warn") and r["evidence"].startswith("unknown: ")


def test_resource_api_not_served_says_how_to_serve_it():
    r = by_id(
        evaluate_cluster(cluster(crds={RESOURCE_API: False}), gpu_hosts(), options(GC))["results"], "dra.api_served"
    )
    assert "does not serve resource.k8s.io/v1" in r["evidence"]
    assert "runtime-config=resource.k8s.io/v1=false" in r["fix"]


# -- the driver ------------------------------------------------------------------------------------------------


def test_nvmls_driver_version_counts_before_the_kernel_modules_as_in_the_gpu_operator_gate():
    ctx = host_ctx(facts(UBUNTU), nvml(driver="580.95.05"))  # the tree's kernel module says 550.127.05
    r = by_id(evaluate_host(ctx, options(GC))["results"], "dra.driver_version")
    assert r["status"] == "pass" and "580.95.05" in r["evidence"]


def test_an_old_host_driver_fails_with_the_r580_fix_and_the_gate_refuses_it_too(tmp_path):
    ctx = host_ctx(tree(tmp_path, UBUNTU, {"proc/driver/nvidia/version": NVRM % "575.64.05"}))
    r = by_id(evaluate_host(ctx, options(GC))["results"], "dra.driver_version")
    assert r["status"] == "fail" and "host driver 575.64.05 is older than %d" % GPUCLUSTER_MIN_DRIVER in r["evidence"]
    assert "R580" in r["fix"]
    refusals, _warnings = mode_gate("gpucluster", None, "v1.36.3", [], {"n": "575.64.05"})
    assert refusals


def test_operator_managed_judges_the_driver_the_operator_installs():
    ctx = host_ctx(facts(UBUNTU))
    passed = by_id(evaluate_host(ctx, options(dict(OM, operator_mode="gpucluster")))["results"], "dra.driver_version")
    assert passed["status"] == "pass" and "the operator's driver 595.91.07" in passed["evidence"]
    old = dict(OM, operator_mode="gpucluster", driver_version="535.309.01")
    failed = by_id(evaluate_host(ctx, options(old))["results"], "dra.driver_version")
    assert failed["status"] == "fail" and "for example 580.173.02" in failed["fix"]


def test_no_driver_loaded_is_left_to_driver_preinstalled_present(tmp_path):
    ctx = host_ctx(tree(tmp_path, UBUNTU, remove=["proc/driver/nvidia/version"]))
    r = by_id(evaluate_host(ctx, options(GC))["results"], "dra.driver_version")
    assert r["status"] == "not_applicable" and "driver.preinstalled_present" in r["evidence"]


# -- CDI -------------------------------------------------------------------------------------------------------


def test_containerd_2_enables_cdi_by_default_when_its_version_3_config_does_not_set_it(tmp_path):
    gh = tree(tmp_path, UBUNTU, {CONTAINERD_CONFIG: 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n'})
    r = by_id(evaluate_host(host_ctx(gh), options(GC))["results"], "dra.cdi_enabled")
    assert r["status"] == "pass" and "enables CDI by default" in r["evidence"]


def test_cdi_unset_in_a_version_2_config_is_an_unknown_warn_with_the_setting_to_add(tmp_path):
    gh = tree(tmp_path, UBUNTU, {CONTAINERD_CONFIG: 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'})
    r = by_id(evaluate_host(host_ctx(gh), options(GC))["results"], "dra.cdi_enabled")
    assert (r["status"], r["severity"]) == ("fail", "warn") and r["evidence"].startswith("unknown: ")
    assert "containerd 1.7 leaves it off" in r["evidence"] and "enable_cdi = true" in r["fix"]


def test_on_k3s_the_fix_names_the_template_that_renders_containerds_config():
    # The tree's rendered config.toml does not set enable_cdi (its template does; k3s renders it at start).
    r = by_id(evaluate_host(host_ctx(facts("k3s-operator-driver")), options(GC))["results"], "dra.cdi_enabled")
    assert (r["status"], r["severity"]) == ("fail", "warn")
    assert "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl" in r["fix"]


def test_cri_o_passes_and_no_runtime_detected_is_unknown():
    cri_o = dict(facts(UBUNTU), container_runtime={"name": "cri-o", "config_path": "/etc/crio/crio.conf", "config": {}})
    assert by_id(evaluate_host(host_ctx(cri_o), options(GC))["results"], "dra.cdi_enabled")["status"] == "pass"
    none = dict(facts(UBUNTU), container_runtime={"name": None, "config": None})
    r = by_id(evaluate_host(host_ctx(none), options(GC))["results"], "dra.cdi_enabled")
    assert (r["status"], r["severity"]) == ("fail", "warn") and "none detected" in r["evidence"]


# -- the report ------------------------------------------------------------------------------------------------


def test_the_report_names_the_dra_driver_of_the_release_in_gpucluster_mode_only():
    rep = report(gpu_hosts(), cluster(crds={RESOURCE_API: True}), dict(GC, operator_version="v26.7.1"))
    assert (rep["operator_mode"], rep["dra_driver"]) == ("gpucluster", "v0.5.0")
    assert "GPUCluster mode with DRA driver v0.5.0" in markdown(rep)
    plain = report(gpu_hosts(), cluster(), PRE)
    assert (plain["operator_mode"], plain["dra_driver"]) == (None, None)
    assert "DRA driver" not in markdown(plain)
