"""Specification of gpu_host_facts (plugins/module_utils/_clients/host_facts/) against the fake host trees in
tests/sim/hosts/, plus malformed and partial sources. Every expected value below is what the tree's files say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[4]


from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import (
    container_runtime,
    kernel,
    nvidia_stack,
    reader,
    system,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf

HOSTS = ROOT / "tests" / "sim" / "hosts"
H100_BUS = [
    "0000:18:00.0",
    "0000:2a:00.0",
    "0000:3a:00.0",
    "0000:5d:00.0",
    "0000:9a:00.0",
    "0000:ab:00.0",
    "0000:ba:00.0",
    "0000:db:00.0",
]

EXPECTED = {
    "ubuntu2204-kubeadm-containerd": {
        "kernel": {
            "release": "5.15.0-124-generic",
            "architecture": "x86_64",
            "headers_present": True,
            "version": "#134-Ubuntu SMP Fri Sep 27 20:20:17 UTC 2024",
        },
        "os": {
            "id": "ubuntu",
            "version_id": "22.04",
            "id_like": ["debian"],
            "pretty_name": "Ubuntu 22.04.5 LTS",
            "version_codename": "jammy",
        },
        "nvidia_driver": {
            "loaded": True,
            "version": "550.127.05",
            "flavor": "proprietary",
            "gcc": "gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)",
        },
        "nouveau": {
            "loaded": False,
            "blacklisted_modprobe": True,
            "modeset_disabled": True,
            "blacklisted_cmdline": False,
            "blacklist_files": ["/etc/modprobe.d/blacklist-nouveau.conf"],
        },
        "secure_boot": {"efi": True, "enabled": False},
        "kubernetes": {"distribution": "kubeadm", "role": "worker"},
        "container_runtime": {
            "name": "containerd",
            "config_path": "/etc/containerd/config.toml",
            "socket": "/run/containerd/containerd.sock",
            "socket_present": True,
            "template_path": None,
            "config": {
                "version": 2,
                "runtimes": ["nvidia", "runc"],
                "default_runtime": "nvidia",
                "nvidia_runtime": True,
                "nvidia_runtime_binary": "/usr/bin/nvidia-container-runtime",
                "systemd_cgroup": True,
                "cdi_enabled": True,
                "imports": [],
            },
        },
        "container_toolkit": {
            "installed": True,
            "config_path": "/etc/nvidia-container-runtime/config.toml",
            "mode": "auto",
            "cdi_default_kind": "nvidia.com/gpu",
            "ldconfig": "@/sbin/ldconfig.real",
            "root": "/",
        },
        "cdi": {"specs": [], "nvidia": False},
        "iommu": {"enabled": True, "groups": 4, "cmdline": {"intel_iommu": "on", "iommu": "pt"}},
        "fabric_manager": {"installed": False, "enabled": False, "required": False},
        "unattended_upgrades": {"tool": "unattended-upgrades", "enabled": True, "kernel_blacklisted": False},
        "problems": [],
    },
    "ubuntu2404-operator-driver-root": {
        "kernel": {
            "release": "6.8.0-48-generic",
            "architecture": "x86_64",
            "headers_present": True,
            "version": "#48-Ubuntu SMP PREEMPT_DYNAMIC Fri Sep 27 14:04:52 UTC 2024",
        },
        "os": {
            "id": "ubuntu",
            "version_id": "24.04",
            "id_like": ["debian"],
            "pretty_name": "Ubuntu 24.04.1 LTS",
            "version_codename": "noble",
        },
        "nvidia_driver": {
            "loaded": True,
            "version": "570.124.06",
            "flavor": "open",
            "gcc": "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)",
        },
        "nouveau": {
            "loaded": False,
            "blacklisted_modprobe": False,
            "modeset_disabled": False,
            "blacklisted_cmdline": True,
            "blacklist_files": [],
        },
        "kubernetes": {"distribution": "kubeadm", "role": "control-plane"},
        "container_runtime": {
            "name": "containerd",
            "config_path": "/etc/containerd/config.toml",
            "socket": "/run/containerd/containerd.sock",
            "socket_present": True,
            "template_path": None,
            "config": {
                "version": 3,
                "runtimes": ["nvidia", "runc"],
                "default_runtime": "nvidia",
                "nvidia_runtime": True,
                "nvidia_runtime_binary": "/usr/local/nvidia/toolkit/nvidia-container-runtime",
                "systemd_cgroup": True,
                "cdi_enabled": True,
                "imports": ["/etc/containerd/conf.d/*.toml"],
            },
        },
        "cdi": {
            "specs": [
                {"path": "/var/run/cdi/management.nvidia.com-gpu.json", "kind": "management.nvidia.com/gpu"},
                {"path": "/var/run/cdi/nvidia.yaml", "kind": "nvidia.com/gpu"},
            ],
            "nvidia": True,
        },
        "container_toolkit": {
            "installed": True,
            "config_path": "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml",
            "mode": "cdi",
            "cdi_default_kind": "nvidia.com/gpu",
            "ldconfig": "@/sbin/ldconfig.real",
            "root": "/run/nvidia/driver",
        },
        "validations": {
            "present": True,
            "all_ready": True,
            "ready": {"driver": True, "toolkit": True, "cuda": True, "plugin": True},
            "files": [".driver-ctr-ready", "cuda-ready", "driver-ready", "plugin-ready", "toolkit-ready"],
            "driver_ready": {
                "IS_HOST_DRIVER": "false",
                "NVIDIA_DRIVER_ROOT": "/run/nvidia/driver",
                "DRIVER_ROOT_CTR_PATH": "/driver-root",
                "NVIDIA_DEV_ROOT": "/run/nvidia/driver",
                "DEV_ROOT_CTR_PATH": "/driver-root",
            },
        },
        "fabric_manager": {"installed": True, "enabled": True, "required": True},
        "unattended_upgrades": {"tool": "unattended-upgrades", "enabled": True, "kernel_blacklisted": True},
        "problems": [],
    },
    "rhel9-secureboot": {
        "kernel": {
            "release": "5.14.0-427.42.1.el9_4.x86_64",
            "headers_present": True,
            "architecture": "x86_64",
            "version": "#1 SMP PREEMPT_DYNAMIC Fri Oct 18 14:35:40 EDT 2024",
        },
        "os": {
            "id": "rhel",
            "version_id": "9.4",
            "id_like": ["fedora"],
            "pretty_name": "Red Hat Enterprise Linux 9.4 (Plow)",
            "version_codename": None,
        },
        "secure_boot": {"efi": True, "enabled": True},
        "nvidia_driver": {
            "loaded": True,
            "version": "535.216.01",
            "flavor": "proprietary",
            "gcc": "gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)",
        },
        "nouveau": {
            "loaded": False,
            "blacklisted_modprobe": True,
            "modeset_disabled": True,
            "blacklisted_cmdline": True,
            "blacklist_files": ["/usr/lib/modprobe.d/nvidia-installer-disable-nouveau.conf"],
        },
        "kubernetes": {"distribution": "kubeadm", "role": "worker"},
        "container_runtime": {
            "name": "cri-o",
            "config_path": "/etc/crio/crio.conf",
            "socket": "/run/crio/crio.sock",
            "socket_present": True,
            "template_path": None,
            "config": {
                "runtimes": ["crun", "nvidia"],
                "default_runtime": "nvidia",
                "nvidia_runtime": True,
                "cgroup_manager": "systemd",
            },
        },
        "cdi": {"specs": [{"path": "/etc/cdi/nvidia.json", "kind": "nvidia.com/gpu"}], "nvidia": True},
        "iommu": {"enabled": False, "groups": 0, "cmdline": {}},
        "unattended_upgrades": {"tool": "dnf-automatic", "enabled": True, "kernel_blacklisted": None},
        "problems": [],
    },
    "k3s": {
        "os": {
            "id": "ubuntu",
            "version_id": "22.04",
            "id_like": ["debian"],
            "pretty_name": "Ubuntu 22.04.5 LTS",
            "version_codename": "jammy",
        },
        "secure_boot": {"efi": False, "enabled": False},
        "kubernetes": {"distribution": "k3s", "role": "agent"},
        "container_runtime": {
            "name": "containerd",
            "config_path": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
            "socket": "/run/k3s/containerd/containerd.sock",
            "socket_present": True,
            "template_path": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
            "config": {
                "version": 2,
                "runtimes": ["nvidia", "runc"],
                "default_runtime": "nvidia",
                "nvidia_runtime": True,
                "nvidia_runtime_binary": "/usr/local/nvidia/toolkit/nvidia-container-runtime",
                "systemd_cgroup": True,
                "cdi_enabled": True,
                "imports": [],
            },
        },
        "validations": {
            "present": True,
            "all_ready": False,
            "ready": {"driver": True, "toolkit": True, "cuda": False, "plugin": False},
            "files": ["driver-ready", "toolkit-ready"],
            "driver_ready": {
                "IS_HOST_DRIVER": "true",
                "NVIDIA_DRIVER_ROOT": "/",
                "DRIVER_ROOT_CTR_PATH": "/host",
                "NVIDIA_DEV_ROOT": "/",
                "DEV_ROOT_CTR_PATH": "/host",
            },
        },
        "fabric_manager": {"installed": True, "enabled": False, "required": True},
        "unattended_upgrades": {"tool": "unattended-upgrades", "enabled": False, "kernel_blacklisted": False},
        "problems": [],
    },
    "rke2": {
        "kubernetes": {"distribution": "rke2", "role": "server"},
        "nvidia_driver": {
            "loaded": True,
            "version": "570.124.06",
            "flavor": "open",
            "gcc": "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)",
        },
        "container_runtime": {
            "name": "containerd",
            "config_path": "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
            "socket": "/run/k3s/containerd/containerd.sock",
            "socket_present": True,
            "template_path": None,
            "config": {
                "version": 2,
                "runtimes": ["runc"],
                "default_runtime": "runc",
                "nvidia_runtime": False,
                "nvidia_runtime_binary": None,
                "systemd_cgroup": True,
                "cdi_enabled": None,
                "imports": [],
            },
        },
        "container_toolkit": {
            "installed": False,
            "config_path": None,
            "mode": None,
            "cdi_default_kind": None,
            "ldconfig": None,
            "root": None,
        },
        "validations": {
            "present": False,
            "files": [],
            "all_ready": False,
            "driver_ready": None,
            "ready": {"driver": False, "toolkit": False, "cuda": False, "plugin": False},
        },
        "iommu": {"enabled": True, "groups": 12, "cmdline": {"amd_iommu": "on"}},
        "fabric_manager": {"installed": True, "enabled": True, "required": True},
        "problems": [],
    },
    "microk8s": {
        "os": {
            "id": "ubuntu",
            "version_id": "24.04",
            "id_like": ["debian"],
            "pretty_name": "Ubuntu 24.04.1 LTS",
            "version_codename": "noble",
        },
        "nouveau": {
            "loaded": False,
            "blacklisted_modprobe": False,
            "modeset_disabled": True,
            "blacklisted_cmdline": False,
            "blacklist_files": [],
        },
        "kubernetes": {"distribution": "microk8s", "role": None},
        "container_runtime": {
            "name": "containerd",
            "config_path": "/var/snap/microk8s/current/args/containerd-template.toml",
            "socket": "/var/snap/microk8s/common/run/containerd.sock",
            "socket_present": True,
            "template_path": None,
            "config": {
                "version": 2,
                "runtimes": ["nvidia", "runc"],
                "default_runtime": "nvidia",
                "nvidia_runtime": True,
                "nvidia_runtime_binary": "/var/snap/microk8s/current/bin/nvidia-container-runtime",
                "systemd_cgroup": True,
                "cdi_enabled": True,
                "imports": [],
            },
        },
        "problems": [],
    },
    "broken-nouveau-no-headers": {
        "kernel": {
            "release": "5.15.0-125-generic",
            "architecture": "x86_64",
            "headers_present": False,
            "version": "#135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024",
        },
        # two garbage lines (one unquotable) are skipped, the rest is kept
        "os": {"id": "ubuntu", "version_id": "22.04", "id_like": [], "pretty_name": None, "version_codename": None},
        "nouveau": {
            "loaded": True,
            "blacklisted_modprobe": False,
            "modeset_disabled": False,
            "blacklisted_cmdline": False,
            "blacklist_files": [],
        },
        "nvidia_driver": {"loaded": False, "version": None, "flavor": None, "gcc": None},
        "modules": {
            "nvidia": {"loaded": False, "refcount": None},
            "nvidia_uvm": {"loaded": False, "refcount": None},
            "nvidia_modeset": {"loaded": False, "refcount": None},
            "nvidia_drm": {"loaded": False, "refcount": None},
            "nvidia_peermem": {"loaded": False, "refcount": None},
            "nouveau": {"loaded": True, "refcount": 1},
        },
        "devices": {"nodes": [], "char_links": {}, "char_links_missing": []},
        "kubernetes": {"distribution": "kubeadm", "role": "worker"},
        "container_runtime": {
            "name": "containerd",
            "config_path": "/etc/containerd/config.toml",
            "socket": "/run/containerd/containerd.sock",
            "socket_present": True,
            "template_path": None,
            "config": None,
        },
        "container_toolkit": {
            "installed": True,
            "config_path": "/etc/nvidia-container-runtime/config.toml",
            "mode": "legacy",
            "cdi_default_kind": None,
            "ldconfig": None,
            "root": None,
        },
        "cdi": {"specs": [{"path": "/etc/cdi/nvidia.json", "kind": None}], "nvidia": False},
        "secure_boot": {"efi": False, "enabled": False},
        "validations": {
            "present": False,
            "files": [],
            "all_ready": False,
            "driver_ready": None,
            "ready": {"driver": False, "toolkit": False, "cuda": False, "plugin": False},
        },
    },
}

# (address, device id, kind, bound driver, NUMA node) per tree
PCI = {
    "ubuntu2204-kubeadm-containerd": [
        (a, "0x26b9", "gpu", "nvidia", n)
        for a, n in zip(["0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0"], [0, 0, 1, 1])
    ],
    "ubuntu2404-operator-driver-root": sorted(
        [(a, "0x2330", "gpu", "nvidia", 0 if i < 4 else 1) for i, a in enumerate(H100_BUS)]
        + [(f"0000:0{k}:00.0", "0x22a3", "nvswitch", "nvidia", 0) for k in (5, 6, 7, 8)]
    ),
    "rhel9-secureboot": [("0000:00:1e.0", "0x1eb8", "gpu", "nvidia", -1)],
    "k3s": sorted(
        [
            (a, "0x20b2", "gpu", "nvidia", i // 4)
            for i, a in enumerate(
                [
                    "0000:07:00.0",
                    "0000:0f:00.0",
                    "0000:47:00.0",
                    "0000:4e:00.0",
                    "0000:87:00.0",
                    "0000:90:00.0",
                    "0000:b7:00.0",
                    "0000:bd:00.0",
                ]
            )
        ]
        + [(f"0000:c{k}:00.0", "0x1af1", "nvswitch", "nvidia", 1) for k in range(4, 10)]
    ),
    "rke2": sorted(
        [(a, "0x2330", "gpu", "nvidia", 0) for a in H100_BUS]
        + [(f"0000:0{k}:00.0", "0x22a3", "nvswitch", "nvidia", 0) for k in (5, 6, 7, 8)]
    ),
    "microk8s": [("0000:65:00.0", "0x2236", "gpu", "nvidia", 0)],
    "broken-nouveau-no-headers": [
        ("0000:01:00.0", "0x26b9", "gpu", "nouveau", 0),
        ("0000:41:00.0", "0x26b9", "gpu", "nouveau", 0),
    ],
}
GPUS_DEV = {
    "ubuntu2204-kubeadm-containerd": 4,
    "ubuntu2404-operator-driver-root": 8,
    "rhel9-secureboot": 1,
    "k3s": 8,
    "rke2": 8,
    "microk8s": 1,
}


@pytest.fixture(scope="module")
def facts():
    return {name: hf.collect(str(HOSTS / name)) for name in EXPECTED}


def test_every_fake_host_tree_is_specified():
    assert sorted(p.name for p in HOSTS.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("host,section", [(h, s) for h, spec in EXPECTED.items() for s in spec])
def test_section_equals_the_tree(facts, host, section):
    assert facts[host][section] == EXPECTED[host][section]


@pytest.mark.parametrize("host", sorted(PCI))
def test_nvidia_pci_devices(facts, host):
    pci = facts[host]["pci"]
    got = [(d["address"], d["device_id"], d["kind"], d["driver"], d["numa_node"]) for d in pci["devices"]]
    assert got == PCI[host]
    assert pci["gpu_count"] == sum(1 for d in PCI[host] if d[2] == "gpu")
    assert pci["nvswitch_count"] == sum(1 for d in PCI[host] if d[2] == "nvswitch")


@pytest.mark.parametrize("host", sorted(GPUS_DEV))
def test_device_nodes_and_dev_char_links(facts, host):
    n = GPUS_DEV[host]
    dev = facts[host]["devices"]
    assert [f"nvidia{i}" for i in range(n)] == [x for x in dev["nodes"] if x[6:].isdigit()]
    if host == "rke2":  # links never created: the "Failed to initialize NVML: Unknown Error" trap
        assert dev["char_links"] == {}
        assert "nvidia0" in dev["char_links_missing"] and "nvidiactl" in dev["char_links_missing"]
    else:
        assert dev["char_links"]["195:0"] == "../nvidia0"
        assert dev["char_links"]["195:255"] == "../nvidiactl"
        assert [m for m in dev["char_links_missing"] if m != "nvidia-nvswitchctl"] == []


def test_module_refcounts(facts):
    mods = facts["ubuntu2204-kubeadm-containerd"]["modules"]
    assert {k: v["refcount"] for k, v in mods.items() if v["loaded"]} == {
        "nvidia": 12,
        "nvidia_uvm": 2,
        "nvidia_modeset": 1,
        "nvidia_drm": 0,
    }
    assert facts["ubuntu2404-operator-driver-root"]["modules"]["nvidia_peermem"] == {"loaded": True, "refcount": 0}


def test_broken_node_reports_each_bad_source_and_keeps_the_rest(facts):
    problems = facts["broken-nouveau-no-headers"]["problems"]
    assert [(p["source"], p["reason"]) for p in problems] == [
        ("/etc/os-release", "malformed"),
        ("/etc/containerd/config.toml", "malformed"),
        ("/etc/cdi/nvidia.json", "malformed"),
    ]
    assert problems[0]["detail"] == "2 line(s) ignored"


def test_cmdline_stops_at_init_arguments():
    assert kernel.parse_cmdline("ro quiet intel_iommu=on -- --init-flag x=1") == {
        "ro": True,
        "quiet": True,
        "intel_iommu": "on",
    }


# ---- partial and malformed sources ------------------------------------------------------------------------


def write(root, rel, data):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def test_an_empty_root_gives_defaults_and_names_the_missing_essentials(tmp_path):
    f = hf.collect(str(tmp_path))
    assert f["kernel"] == {"release": None, "version": None, "architecture": None, "headers_present": None}
    assert f["os"]["id"] is None and f["kubernetes"] == {"distribution": None, "role": None}
    assert f["container_runtime"]["name"] is None and f["pci"]["devices"] == []
    assert sorted(p["source"] for p in f["problems"]) == [
        "/proc/cmdline",
        "/proc/sys/kernel/osrelease",
        "/usr/lib/os-release",
    ]
    assert {p["reason"] for p in f["problems"]} == {"missing"}


def test_an_unreadable_file_is_a_problem_not_a_failure(tmp_path, monkeypatch):
    p = write(tmp_path, "proc/driver/nvidia/version", "NVRM version: x 550.1 y\n")
    real_open = open

    def denying_open(path, *args, **kwargs):
        # Root reads files whatever their mode, so the permission error is raised here instead of by chmod.
        if str(path) == str(p):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", denying_open)
    f = hf.collect(str(tmp_path))
    assert {"source": "/proc/driver/nvidia/version", "reason": "unreadable"} in [
        {k: v for k, v in q.items() if k != "detail"} for q in f["problems"]
    ]


def test_a_directory_where_a_file_should_be_is_unreadable(tmp_path):
    (tmp_path / "proc" / "driver" / "nvidia" / "version").mkdir(parents=True)
    f = hf.collect(str(tmp_path))
    assert ("/proc/driver/nvidia/version", "unreadable") in [(q["source"], q["reason"]) for q in f["problems"]]
    assert f["nvidia_driver"]["loaded"] is False


def test_garbage_nvidia_version_and_refcnt(tmp_path):
    write(tmp_path, "proc/driver/nvidia/version", "garbage\n")
    write(tmp_path, "sys/module/nvidia/refcnt", "many\n")
    f = hf.collect(str(tmp_path))
    assert f["nvidia_driver"]["loaded"] is False
    assert f["modules"]["nvidia"] == {"loaded": True, "refcount": None}
    got = [(q["source"], q["reason"]) for q in f["problems"]]
    assert ("/proc/driver/nvidia/version", "malformed") in got and ("/sys/module/nvidia/refcnt", "malformed") in got


def test_short_secure_boot_variable(tmp_path):
    write(tmp_path, system.SECURE_BOOT_VAR, b"\x06\x00")
    f = hf.collect(str(tmp_path))
    assert f["secure_boot"] == {"efi": True, "enabled": None}
    assert ("/" + system.SECURE_BOOT_VAR, "malformed") in [(q["source"], q["reason"]) for q in f["problems"]]


def test_docker_daemon_json(tmp_path):
    write(
        tmp_path,
        "etc/docker/daemon.json",
        json.dumps(
            {
                "default-runtime": "nvidia",
                "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},
                "features": {"cdi": True},
            }
        ),
    )
    cr = hf.collect(str(tmp_path))["container_runtime"]
    assert cr["name"] == "docker" and cr["socket_present"] is False
    assert cr["config"] == {
        "runtimes": ["nvidia"],
        "default_runtime": "nvidia",
        "nvidia_runtime": True,
        "cdi_enabled": True,
    }


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", ""])
def test_bad_daemon_json_is_reported(tmp_path, content):
    write(tmp_path, "etc/docker/daemon.json", content)
    f = hf.collect(str(tmp_path))
    assert f["container_runtime"]["config"] is None
    assert ("/etc/docker/daemon.json", "malformed") in [(q["source"], q["reason"]) for q in f["problems"]]


def test_k0s_distribution(tmp_path):
    write(
        tmp_path,
        "etc/k0s/containerd.d/nvidia.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\nruntime_type = "x"\n',
    )
    f = hf.collect(str(tmp_path))
    assert f["kubernetes"]["distribution"] == "k0s"
    assert f["container_runtime"]["socket"] == "/run/k0s/containerd.sock"
    assert f["container_runtime"]["config_path"] == "/etc/k0s/containerd.d/nvidia.toml"
    assert f["container_runtime"]["config"]["nvidia_runtime"] is True


def test_without_a_toml_parser_toml_sources_become_problems(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "_toml", None)
    f = hf.collect(str(HOSTS / "ubuntu2204-kubeadm-containerd"))
    assert f["container_runtime"]["config"] is None
    assert {(q["source"], q["reason"]) for q in f["problems"]} == {
        ("/etc/containerd/config.toml", "toml_parser_unavailable"),
        ("/etc/nvidia-container-runtime/config.toml", "toml_parser_unavailable"),
    }


# ---- parser properties ------------------------------------------------------------------------------------

KEY = st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,12}\Z")
VAL = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=30)


@given(st.dictionaries(KEY, VAL, max_size=8))
def test_os_release_round_trip(data):
    text = "\n".join(f'{k}="{v}"' for k, v in data.items() if not any(c in v for c in '"\\$`'))
    expected = {
        k: " ".join(v.split()) if v.split() else "" for k, v in data.items() if not any(c in v for c in '"\\$`')
    }
    parsed, bad = system.parse_os_release(text)
    assert bad == 0
    assert {k: " ".join(v.split()) if v.split() else "" for k, v in parsed.items()} == expected


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_parsers_never_raise_on_arbitrary_text(text):
    system.parse_os_release(text)
    nvidia_stack.parse_kv(text)
    kernel.parse_modprobe(text)
    kernel.parse_cmdline(text)
    result = kernel.parse_nvidia_version(text)
    assert result is None or result["flavor"] in ("open", "proprietary")
    assert system.secure_boot(text.encode()) in (None, True, False)


@given(st.text(max_size=300))
def test_toml_reader_reports_or_parses(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("toml")
    write(root, "etc/containerd/config.toml", text)
    r = reader.Reader(str(root))
    data = r.toml("etc/containerd/config.toml")
    assert (data is None) == bool(r.problems)
    if isinstance(data, dict):
        container_runtime.containerd_summary(data)  # must not raise on any parsed shape


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=10,
    )
)
def test_summaries_tolerate_any_shape(doc):
    doc = doc if isinstance(doc, dict) else {"plugins": doc}
    for fn in (container_runtime.containerd_summary, container_runtime.crio_summary, container_runtime.docker_summary):
        try:
            fn(doc)
        except (AttributeError, TypeError) as exc:  # pragma: no cover - a failure is a bug
            pytest.fail(f"{fn.__name__} raised {exc!r} on {doc!r}")


@given(
    st.lists(
        st.sampled_from(
            [
                "blacklist nouveau",
                "options nouveau modeset=0",
                "# blacklist nouveau",
                "install nouveau /bin/false",
                "blacklist nvidia",
                "options x y=1",
            ]
        ),
        max_size=6,
    )
)
def test_modprobe_blacklist(lines):
    black, opts = kernel.parse_modprobe("\n".join(lines))
    assert ("nouveau" in black) == any(x in lines for x in ("blacklist nouveau", "install nouveau /bin/false"))
    assert (opts.get("nouveau", {}).get("modeset") == "0") == ("options nouveau modeset=0" in lines)
