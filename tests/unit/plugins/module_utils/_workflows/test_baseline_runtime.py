"""Specification of the gpu_baseline checks of runtime_checks.py on the fixture trees written for them: containerd
config versions that do not agree, NRI plugin mode on a runtime too old for it, Secure Boot with an unsigned
NVIDIA module, and precompiled driver images that do not exist for the node's kernel - each a finding with its fix,
each a pass on a tree where the case does not arise."""

from __future__ import annotations

import pytest
from test_baseline import HOSTS, NRI, OM, facts, host_ctx, tree

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import evaluate_host
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import options

MIXED = "ubuntu2404-containerd2-mixed-dropin"
NRI_17 = "ubuntu2204-containerd17-nri"
UNSIGNED = "ubuntu2204-secureboot-unsigned"
PLAIN = "ubuntu2204-kubeadm-containerd"


def result(gpu_host, check_id, opts=None):
    res = evaluate_host(host_ctx(gpu_host), options(OM if opts is None else opts))["results"]
    return next(r for r in res if r["id"] == check_id)


def test_a_drop_in_of_another_version_than_the_root_config_is_a_failure_with_the_fix():
    r = result(facts(MIXED), "runtime.containerd_config_versions")
    assert (r["status"], r["severity"]) == ("fail", "fail")
    assert "/etc/containerd/conf.d/99-nvidia.toml is version 2, older than root config version 3" in r["evidence"]
    assert "RUNTIME_CONFIG_SOURCE=file" in r["fix"]


def test_a_drop_in_newer_than_the_root_config_is_what_containerd_2_refuses(tmp_path):
    dropin = (HOSTS / MIXED / "etc/containerd/conf.d/99-nvidia.toml").read_text().replace("version = 2", "version = 4")
    r = result(
        tree(tmp_path, MIXED, {"etc/containerd/conf.d/99-nvidia.toml": dropin}), "runtime.containerd_config_versions"
    )
    assert r["status"] == "fail"
    assert "version 4, newer than root config version 3" in r["evidence"]
    assert "containerd 2.0.2 reads up to 3 (unsupported config version)" in r["evidence"]


def test_a_version_3_config_on_containerd_1_7_is_an_unsupported_config_version(tmp_path):
    cfg = (HOSTS / NRI_17 / "etc/containerd/config.toml").read_text().replace("version = 2", "version = 3", 1)
    r = result(tree(tmp_path, NRI_17, {"etc/containerd/config.toml": cfg}), "runtime.containerd_config_versions")
    assert r["status"] == "fail" and "containerd 1.7.24 reads up to 2" in r["evidence"]


def test_one_config_file_at_one_version_passes():
    r = result(facts(NRI_17), "runtime.containerd_config_versions")
    assert (r["status"], r["evidence"]) == ("pass", "1 containerd config file(s) at version 2 (containerd 1.7.24)")


def test_an_unreadable_containerd_config_is_unknown_not_a_pass(tmp_path):
    r = result(
        tree(tmp_path, MIXED, {"etc/containerd/conf.d/99-nvidia.toml": "version = \n"}),
        "runtime.containerd_config_versions",
    )
    assert (r["status"], r["severity"]) == ("fail", "warn") and r["evidence"].startswith("unknown:")


def test_nri_plugin_mode_on_containerd_1_7_24_fails_naming_the_versions_it_needs():
    r = result(facts(NRI_17), "runtime.nri_supported", NRI)
    assert r["status"] == "fail"
    assert "the host runs containerd 1.7.24 (/usr/bin/containerd)" in r["evidence"]
    assert "1.7.30" in r["evidence"] and "Upgrade containerd" in r["fix"]


def test_nri_plugin_mode_on_containerd_2_0_fails_and_on_1_7_30_passes(tmp_path):
    assert result(facts(MIXED), "runtime.nri_supported", NRI)["status"] == "fail"  # 2.0 is not 2.1+
    status = (HOSTS / MIXED / "var/lib/dpkg/status").read_text().replace("Version: 2.0.2-1", "Version: 1.7.30-1")
    r = result(tree(tmp_path, MIXED, {"var/lib/dpkg/status": status}), "runtime.nri_supported", NRI)
    assert (r["status"], r["evidence"]) == (
        "pass",
        "containerd 1.7.30 (/var/lib/dpkg/status (containerd.io)) supports NRI plugin mode",
    )


def test_nri_supported_leaves_a_host_without_a_version_on_disk_to_the_node_check():
    r = result(facts(PLAIN), "runtime.nri_supported", NRI)
    assert r["status"] == "not_applicable" and "runtime.nri_version" in r["evidence"]


def test_secure_boot_with_an_unsigned_loaded_nvidia_module_fails_with_the_signing_fix():
    f = facts(UNSIGNED)
    assert f["secure_boot"]["mok_keys"] == ["d2:99:55:9f:92:1b:8a:87:3f:35:7c:6c:c5:fc:45:93:e4:d2:f5:f1"]
    r = result(f, "secure_boot.module_signed")
    assert r["status"] == "fail" and "unsigned (taint E in /proc/modules; 1 MOK key(s) enrolled)" in r["evidence"]
    assert "mokutil --import" in r["fix"]


def test_secure_boot_with_a_signed_module_passes_and_without_secure_boot_does_not_apply():
    assert result(facts("rhel9-secureboot"), "secure_boot.module_signed")["status"] == "pass"
    assert result(facts(PLAIN), "secure_boot.module_signed")["status"] == "not_applicable"


PRECOMPILED = dict(OM, use_precompiled=True, driver_version="580.105.08")


def test_precompiled_drivers_on_a_kernel_without_an_image_fail_naming_the_images_there_are():
    tags = [
        "580-5.15.0-1082-nvidia-ubuntu22.04",
        "580-6.8.0-48-generic-ubuntu24.04",
        "580-6.8.0-49-generic-ubuntu24.04",
    ]
    r = result(facts(MIXED), "driver.precompiled_image", dict(PRECOMPILED, precompiled_tags=tags))
    assert r["status"] == "fail"
    assert r["evidence"] == (
        "no precompiled driver image nvcr.io/nvidia/driver:580-6.8.0-51-generic-ubuntu24.04 for kernel "
        "6.8.0-51-generic (R580 images for this OS: 580-6.8.0-48-generic-ubuntu24.04, 580-6.8.0-49-generic-ubuntu24.04)"
    )


def test_precompiled_drivers_pass_when_the_tag_is_listed_and_name_it_when_no_list_is_given():
    opts = dict(PRECOMPILED, precompiled_tags=["580-6.8.0-51-generic-ubuntu24.04"])
    assert result(facts(MIXED), "driver.precompiled_image", opts)["status"] == "pass"
    r = result(facts(MIXED), "driver.precompiled_image", PRECOMPILED)
    assert (r["status"], r["severity"]) == ("fail", "warn")
    assert "nvcr.io/nvidia/driver:580-6.8.0-51-generic-ubuntu24.04" in r["evidence"]


@pytest.mark.parametrize(
    "operator,os_id,version_id,tag",
    [
        ("v26.7.0", "rhel", "9.6", "580-5.14.0-570.12.1.el9_6.x86_64-rhel9"),
        ("v26.3.0", "rhel", "9.6", "580-5.14.0-570.12.1.el9_6.x86_64-rhel9.6"),
        ("v26.7.0", "ubuntu", "22.04", "580-5.14.0-570.12.1.el9_6.x86_64-ubuntu22.04"),
    ],
)
def test_the_precompiled_tag_is_composed_as_the_operator_release_composes_it(operator, os_id, version_id, tag):
    assert compat.precompiled_tag(operator, "580", "5.14.0-570.12.1.el9_6.x86_64", os_id, version_id) == tag


def test_the_host_fact_gives_the_tag_pattern_and_the_new_facts_of_the_trees():
    f = facts(MIXED)
    assert f["precompiled_driver"]["tag_pattern"] == "<branch>-6.8.0-51-generic-ubuntu24.04"
    cr = f["container_runtime"]
    assert (cr["version"], cr["system_config_present"]) == ("2.0.2", True)
    assert [(c["path"], c["version"], c["runtimes"], c["default_runtime"]) for c in cr["config_files"]] == [
        ("/etc/containerd/config.toml", 3, ["runc"], "runc"),
        ("/etc/containerd/conf.d/99-nvidia.toml", 2, ["nvidia"], "nvidia"),
    ]
