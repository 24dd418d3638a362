"""Fixture specification of gpu_host_facts: every fake host tree in tests/sim/hosts/<tree>/ has an expected-facts
file tests/sim/hosts/<tree>.facts.yml, written from the tree's files, and every fact collected from the tree
equals it. The headline facts of the four trees written from formats this project had not read before are
stated once more below, as sentences."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect

HOSTS = Path(__file__).resolve().parents[5] / "tests" / "sim" / "hosts"
TREES = sorted(p.name for p in HOSTS.iterdir() if p.is_dir())


def expected(tree):
    """The expected facts of ``tree`` (every fact but host_root)."""
    return yaml.safe_load((HOSTS / f"{tree}.facts.yml").read_text())


@pytest.fixture(scope="module")
def facts():
    return {tree: collect(str(HOSTS / tree)) for tree in TREES}


def test_every_tree_has_an_expected_facts_file_and_every_file_a_tree():
    assert sorted(p.name[: -len(".facts.yml")] for p in HOSTS.glob("*.facts.yml")) == TREES


@pytest.mark.parametrize("tree", TREES)
def test_the_expected_file_states_every_fact(facts, tree):
    assert sorted(expected(tree)) == sorted(k for k in facts[tree] if k != "host_root")


@pytest.mark.parametrize("tree,fact", [(t, f) for t in TREES for f in expected(t)])
def test_each_fact_equals_the_expected_file(facts, tree, fact):
    assert facts[tree][fact] == expected(tree)[fact]


def test_the_secure_boot_cloud_vm_has_its_gpus_on_nouveau_and_no_driver(facts):
    f = facts["gcp-secureboot-nouveau"]
    assert (f["secure_boot"]["enabled"], f["nvidia_driver"]["loaded"], f["nouveau"]["loaded"]) == (True, False, True)
    assert {d["driver"] for d in f["pci"]["devices"]} == {"nouveau"} and f["pci"]["gpu_count"] == 2
    # no /proc/sys/kernel/arch on this kernel: the architecture comes from /boot/config-<release>
    assert f["kernel"]["architecture"] == "x86_64"
    assert f["nouveau"]["blacklisted_modprobe"] is False  # the blacklist in modprobe.d is commented out


def test_the_hgx_host_reports_docker_beside_containerd_and_every_nvidia_handler(facts):
    f = facts["hgx-h100-docker-containerd"]
    cr = f["container_runtime"]
    assert (cr["name"], cr["config_source"]) == ("containerd", "system")
    assert cr["config"]["nvidia_runtimes"] == {
        "nvidia": {
            "binary": "/usr/bin/nvidia-container-runtime",
            "runtime_type": "io.containerd.runc.v2",
            "systemd_cgroup": True,
        },
        "nvidia-cdi": {
            "binary": "/usr/bin/nvidia-container-runtime.cdi",
            "runtime_type": "io.containerd.runc.v2",
            "systemd_cgroup": None,  # not set: containerd's default (cgroupfs)
        },
    }
    assert cr["docker"]["nvidia_runtimes"] == {
        "nvidia": {"binary": "nvidia-container-runtime", "runtime_type": None, "systemd_cgroup": True}
    }
    assert f["fabric_manager"]["unit_path"] == "/usr/lib/systemd/system/nvidia-fabricmanager.service"
    assert (f["pci"]["nvswitch_count"], f["numa"]["node_count"]) == (4, 2)
    assert f["kernel"]["architecture"] == "x86_64"  # from the release name: no arch file, no kernel config
    assert f["kernel"]["headers_path"] == "/usr/src/kernels/5.14.0-427.13.1.el9_4.x86_64"


def test_the_k3s_host_runs_the_operator_driver_and_k3s_own_containerd(facts):
    f = facts["k3s-operator-driver"]
    assert f["operator_driver"] == {
        "root": "/run/nvidia/driver",
        "present": True,
        "nvml_library": "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    }
    cr = f["container_runtime"]
    assert (cr["config_source"], cr["socket"]) == ("distribution", "/run/k3s/containerd/containerd.sock")
    assert cr["template"]["extends_base"] is True
    assert cr["template"]["config"]["runtimes"] == ["nvidia"]  # the commented-out nvidia-experimental is not one
    assert [(s["kind"], s["cdi_version"]) for s in f["cdi"]["specs"]] == [
        ("k8s.device-plugin.nvidia.com/gpu", "0.5.0"),
        ("management.nvidia.com/gpu", "0.5.0"),
    ]


def test_the_passthrough_host_binds_its_gpus_to_vfio_pci_on_the_system_containerd(facts):
    f = facts["rke2-vfio-passthrough"]
    assert f["vfio"] == {
        "module_loaded": True,
        "devices": [
            {"address": "0000:17:00.0", "kind": "gpu", "iommu_group": "42", "dev_node": True},
            {"address": "0000:cb:00.0", "kind": "gpu", "iommu_group": "43", "dev_node": True},
        ],
        "gpu_count": 2,
        "dev_entries": ["42", "43", "vfio"],
        "ids": ["10de:26b9"],
        "nvidia_blacklisted": True,
        "nouveau_blacklisted": True,
    }
    cr = f["container_runtime"]
    assert (cr["config_source"], cr["config_path"], cr["template_path"]) == (
        "system",
        "/etc/containerd/config.toml",
        None,
    )


def test_the_container_mode_tree_is_read_inside_its_root_though_its_absolute_links_would_escape(facts):
    """host_root=/host in a container: /etc/os-release and /var/run are absolute links, which the machine running
    the module would follow into its own /usr/lib and /run; the facts are the tree's."""
    tree = HOSTS / "ubuntu2404-container-root-links"
    assert not os.path.realpath(tree / "etc/os-release").startswith(str(tree))  # what a plain open would read
    f = facts["ubuntu2404-container-root-links"]
    assert (f["os"]["id"], f["os"]["version_id"]) == ("ubuntu", "24.04")
    assert [s["path"] for s in f["cdi"]["specs"]] == ["/var/run/cdi/nvidia.yaml"]  # /var/run is /run: once
    assert f["kernel"]["headers_path"] == "/usr/src/linux-headers-6.8.0-51-generic"
    # a modprobe.d link that climbs above the root is read clamped at the root, and said so
    assert f["nouveau"]["blacklist_files"] == [
        "/etc/modprobe.d/blacklist-nouveau.conf",
        "/usr/lib/modprobe.d/nvidia-graphics-drivers.conf",
    ]
    assert [(p["source"], p["reason"]) for p in f["problems"]] == [
        ("/etc/modprobe.d/blacklist-nouveau.conf", "outside_root")
    ]
    assert f["cmdline"]["args"]["modprobe.blacklist"] == "nouveau,nvidiafb"  # both occurrences, as libkmod reads
