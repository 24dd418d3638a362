"""Both fact modules through ansible-playbook, in check mode, against several fake hosts in one inventory:
each host has its own host_root (tests/sim/hosts/<tree>) and NVML fixture (tests/sim/nvml/profiles/<profile>).
Expected values are the fixture values: tests/sim/hosts/<tree>.facts.yml for the host facts, and the NVML profile
values stated in the unit spec that this test reuses. Does not use the cluster test bed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
HOSTS = ROOT / "tests" / "sim" / "hosts"
PROFILES = ROOT / "tests" / "sim" / "nvml" / "profiles"
LIB = ROOT / "build" / "nvml" / "libnvidia-ml.so.1"


def _load(name, rel):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NVML_SPEC = _load("gpuops_nvml_spec", "tests/unit/plugins/module_utils/_clients/test_nvml.py")

# inventory host -> (host tree, NVML profile, library_path set?); every tree in tests/sim/hosts/ is one host
# at least (the k3s-operator tree's driver root holds an empty stand-in library, so library_path is set)
INVENTORY = {
    "kubeadm-l40s": ("ubuntu2204-kubeadm-containerd", "l40s-4", True),
    "operator-h100": ("ubuntu2404-operator-driver-root", "h100-sxm-8", False),  # found under the driver root
    "rhel-t4": ("rhel9-secureboot", "t4-1", True),
    "k3s-a100": ("k3s", "a100-mig-8", True),
    "rke2-degraded": ("rke2", "degraded", True),
    "rke2-gpu-lost": ("rke2", "gpu-lost", True),
    "microk8s-a10": ("microk8s", "fields-unsupported", True),
    "broken": ("broken-nouveau-no-headers", "driver-not-loaded", True),
    "cloud-nouveau": ("gcp-secureboot-nouveau", "driver-not-loaded", True),
    "hgx-docker": ("hgx-h100-docker-containerd", "h100-sxm-8", True),
    "k3s-operator": ("k3s-operator-driver", "a100-mig-8", True),
    "vfio-passthrough": ("rke2-vfio-passthrough", "driver-not-loaded", True),
    "container-root-links": ("ubuntu2404-container-root-links", "l40s-4", True),
    "containerd2-mixed": ("ubuntu2404-containerd2-mixed-dropin", "l40s-4", True),
    "containerd17-nri": ("ubuntu2204-containerd17-nri", "l40s-4", True),
    "secureboot-unsigned": ("ubuntu2204-secureboot-unsigned", "l40s-4", True),
}

PLAYBOOK = """
- name: Gather GPU and host facts
  hosts: all
  gather_facts: false
  tasks:
    - name: Host facts
      gpuops.gpu_operator.gpu_host_facts:
        host_root: "{{ host_root }}"
    - name: GPU facts
      gpuops.gpu_operator.nvidia_gpu_facts:
        host_root: "{{ host_root }}"
        library_path: "{{ library_path | default(omit) }}"
      environment:
        GPUOPS_FAKE_NVML_FIXTURE: "{{ nvml_fixture }}"
    - name: Save facts
      ansible.builtin.copy:
        content: "{{ {'gpu_host': ansible_facts.gpu_host, 'nvidia_gpu': ansible_facts.nvidia_gpu} | to_json }}"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      check_mode: false
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)
    work = tmp_path_factory.mktemp("host_facts")
    colls = work / "collections" / "ansible_collections" / "gpuops"
    colls.mkdir(parents=True)
    (colls / "gpu_operator").symlink_to(ROOT)
    hosts = {}
    for name, (tree, profile, with_lib) in INVENTORY.items():
        hv = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "host_root": str(HOSTS / tree),
            "nvml_fixture": str(PROFILES / f"{profile}.yml"),
            "out_dir": str(work),
        }
        if with_lib:
            hv["library_path"] = str(LIB)
        hosts[name] = hv
    (work / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (work / "play.yml").write_text(PLAYBOOK)
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="0",
        ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
        ANSIBLE_FORKS="8",
    )
    env.pop("LD_LIBRARY_PATH", None)
    bindir = Path(sys.executable).parent
    proc = subprocess.run(
        [str(bindir / "ansible-playbook"), "-i", str(work / "inventory.yml"), "--check", str(work / "play.yml")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout and "changed=" in proc.stdout
    return {name: json.loads((work / f"{name}.json").read_text()) for name in INVENTORY}


def test_every_tree_is_in_the_inventory():
    assert sorted({tree for tree, _profile, _lib in INVENTORY.values()}) == sorted(
        p.name for p in HOSTS.iterdir() if p.is_dir()
    )


@pytest.mark.parametrize("host", sorted(INVENTORY))
def test_host_facts_equal_the_tree(results, host):
    tree = INVENTORY[host][0]
    got = results[host]["gpu_host"]
    assert got["host_root"] == str(HOSTS / tree)
    expected = yaml.safe_load((HOSTS / f"{tree}.facts.yml").read_text())
    assert sorted(got) == sorted([*expected, "host_root"])
    for fact, value in expected.items():
        assert got[fact] == value, fact


@pytest.mark.parametrize("host", [h for h, v in INVENTORY.items() if v[1] not in ("driver-not-loaded", "gpu-lost")])
def test_gpu_facts_equal_the_profile(results, host):
    profile = INVENTORY[host][1]
    fx = NVML_SPEC.Fixture(profile)
    got = results[host]["nvidia_gpu"]
    assert got["available"] is True
    assert (got["driver_version"], got["gpu_count"]) == (fx["driver_version"], fx["gpu_count"])
    for i, gpu in enumerate(got["gpus"]):
        assert {k: v for k, v in gpu.items() if k not in ("health", "field_errors")} == NVML_SPEC.expected_gpu(fx, i)


def test_operator_driver_root_library_is_discovered(results):
    got = results["operator-h100"]["nvidia_gpu"]
    assert got["library_path"] == str(
        HOSTS / "ubuntu2404-operator-driver-root" / "run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    )
    assert got["health"] == "ok" and got["gpu_count"] == 8
    # NVML, /proc/driver/nvidia/version and PCI agree on this host
    host = results["operator-h100"]["gpu_host"]
    assert host["nvidia_driver"]["version"] == got["driver_version"] == "570.124.06"
    assert host["pci"]["gpu_count"] == got["gpu_count"]
    assert [d["address"].upper() for d in host["pci"]["devices"] if d["kind"] == "gpu"] == [
        g["pci_bus_id"][4:] for g in got["gpus"]
    ]


def test_health_verdicts_across_the_fleet(results):
    assert {h: r["nvidia_gpu"]["health"] for h, r in results.items()} == {
        "kubeadm-l40s": "ok",
        "operator-h100": "ok",
        "rhel-t4": "ok",
        "k3s-a100": "warning",
        "rke2-degraded": "critical",
        "rke2-gpu-lost": "critical",
        "microk8s-a10": "ok",
        "broken": None,
        "cloud-nouveau": None,
        "hgx-docker": "ok",
        "k3s-operator": "warning",
        "vfio-passthrough": None,
        "container-root-links": "ok",
        "containerd2-mixed": "ok",
        "containerd17-nri": "ok",
        "secureboot-unsigned": "ok",
    }
    lost = results["rke2-gpu-lost"]["nvidia_gpu"]["gpus"][4]
    assert lost["error"]["reason"] == "gpu_lost" and lost["index"] == 4


def test_broken_node_is_reported_not_failed(results):
    r = results["broken"]
    assert (r["nvidia_gpu"]["available"], r["nvidia_gpu"]["reason"]) == (False, "driver_not_loaded")
    assert r["gpu_host"]["nouveau"]["loaded"] is True and r["gpu_host"]["kernel"]["headers_present"] is False
    assert len(r["gpu_host"]["problems"]) == 3
