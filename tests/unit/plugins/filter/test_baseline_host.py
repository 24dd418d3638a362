"""The baseline_host filter: one host's facts in, every host check's result, the findings and a verdict out."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_host import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.filter.baseline_options import FilterModule as Options

#: gpu_host facts of a clean kubeadm host before the install (no driver loaded yet).
CLEAN_HOST = {
    "kernel": {"release": "5.15.0-124-generic", "headers_present": True},
    "nouveau": {"loaded": False, "blacklisted_modprobe": True, "blacklist_files": ["/etc/modprobe.d/nouveau.conf"]},
    "secure_boot": {"efi": True, "enabled": False},
    "nvidia_driver": {"loaded": False},
    "os": {"id": "ubuntu", "version_id": "22.04"},
    "container_runtime": {
        "name": "containerd",
        "socket_present": True,
        "socket": "/run/containerd/containerd.sock",
        "config_path": "/etc/containerd/config.toml",
    },
    "kubernetes": {"distribution": "kubeadm"},
    "unattended_upgrades": {"enabled": False},
}
NO_NVML = {"available": False, "reason": "library_not_found"}


def baseline_host(gpu_host, opts=None, user_checks=None):
    flt = FilterModule().filters()["baseline_host"]
    return flt({"gpu_host": gpu_host, "nvidia_gpu": NO_NVML}, opts or {}, user_checks)


def result(out, check_id):
    return next(r for r in out["results"] if r["id"] == check_id)


def test_a_clean_host_passes_with_one_result_per_host_check():
    out = baseline_host(CLEAN_HOST)
    assert out["verdict"] == "pass" and out["findings"] == [] and out["lines"] == []
    host_checks = [c["id"] for c in Options().filters()["baseline_options"]({})["checks"] if c["scope"] == "host"]
    assert sorted(r["id"] for r in out["results"]) == sorted(host_checks)
    assert result(out, "nouveau.loaded") == {
        "id": "nouveau.loaded",
        "scope": "host",
        "severity": "fail",
        "title": "nouveau is not loaded",
        "status": "pass",
        "evidence": "nouveau is not loaded",
        "fix": None,
    }


def test_a_finding_carries_its_evidence_and_fix_and_fails_the_host():
    out = baseline_host(dict(CLEAN_HOST, nouveau={"loaded": True, "blacklisted_modprobe": True}))
    assert out["verdict"] == "fail"
    assert [f["id"] for f in out["findings"]] == ["nouveau.loaded"]
    assert out["lines"][0].startswith("nouveau.loaded [fail]: the nouveau module is loaded")
    assert "-- fix: Blacklist nouveau" in out["lines"][0]


def test_the_severity_option_decides_what_a_finding_does_to_the_verdict():
    host = dict(CLEAN_HOST, nouveau={"loaded": True, "blacklisted_modprobe": True})
    assert baseline_host(host, {"severity": {"nouveau.loaded": "warn"}})["verdict"] == "warn"
    assert baseline_host(host, {"severity": {"nouveau.loaded": "info"}})["verdict"] == "pass"


def test_a_skipped_check_is_reported_as_skipped_and_finds_nothing():
    out = baseline_host(dict(CLEAN_HOST, nouveau={"loaded": True}), {"skip": ["nouveau.loaded", "nouveau.blacklisted"]})
    assert result(out, "nouveau.loaded")["status"] == "skipped"
    assert out["verdict"] == "pass"


def test_user_checks_given_apart_are_evaluated_with_the_built_in_ones():
    checks = [{"id": "site.kernel_pinned", "failed": "true", "evidence": "kernel not held", "fix": "apt-mark hold"}]
    out = baseline_host(CLEAN_HOST, {}, checks)
    assert [(f["id"], f["fix"]) for f in out["findings"]] == [("site.kernel_pinned", "apt-mark hold")]


def test_bad_options_fail_the_filter_naming_the_bad_input():
    with pytest.raises(AnsibleFilterError, match=r"gpu_baseline_skip names unknown check id\(s\): nouveau; known ids"):
        baseline_host(CLEAN_HOST, {"skip": ["nouveau"]})
    with pytest.raises(AnsibleFilterError, match="gpu_baseline_driver_policy is 'host'"):
        baseline_host(CLEAN_HOST, {"driver_policy": "host"})
