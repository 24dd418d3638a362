"""Specification of gpu_host_facts (plugins/module_utils/_clients/host_facts/) on small roots written here: how
each fact is read, tri-state (null with a problem when its source is unreadable or malformed, false only when
the source was read and says no), nothing that cannot be resolved vanishes, and parser properties.
The fake host trees are compared fact by fact in test_host_facts_fixtures.py; comments in
test_host_facts_comments.py; damage of every tree in test_host_facts_damage.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import host_damage
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import (
    container_runtime,
    kernel,
    modprobe,
    nvidia_stack,
    pci,
    reader,
    runtime_configs,
    system,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

HOSTS = Path(__file__).resolve().parents[5] / "tests" / "sim" / "hosts"
NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Sep 24 23:00:00 UTC 2024\n"


def test_cmdline_stops_at_init_arguments():
    assert kernel.parse_cmdline("ro quiet intel_iommu=on -- --init-flag x=1") == {
        "ro": True,
        "quiet": True,
        "intel_iommu": "on",
    }


def test_module_refcounts():
    mods = hf.collect(str(HOSTS / "ubuntu2204-kubeadm-containerd"))["modules"]
    assert {k: v["refcount"] for k, v in mods.items() if v["loaded"]} == {
        "nvidia": 12,
        "nvidia_uvm": 2,
        "nvidia_modeset": 1,
        "nvidia_drm": 0,
    }


def test_broken_node_reports_each_bad_source_and_keeps_the_rest():
    f = hf.collect(str(HOSTS / "broken-nouveau-no-headers"))
    assert [(p["source"], p["reason"]) for p in f["problems"]] == [
        ("/etc/os-release", "malformed"),
        ("/etc/containerd/config.toml", "malformed"),
        ("/etc/cdi/nvidia.json", "malformed"),
    ]
    assert f["problems"][0]["detail"] == "2 line(s) ignored"
    assert f["os"]["id"] == "ubuntu" and f["container_runtime"]["config"] is None and f["cdi"]["nvidia"] is None


# ---- host_root ---------------------------------------------------------------------------------------------


def test_a_missing_host_root_is_refused_naming_the_path_and_the_fix(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(ArgumentError) as err:
        hf.check_host_root(str(missing))
    assert str(err.value) == (
        "host_root %s is not a directory: it does not exist; set host_root to where the host's / is mounted "
        "(/ on the host itself, for example /host in a container)" % missing
    )


def test_a_file_as_host_root_is_refused(tmp_path):
    (tmp_path / "root").write_text("")
    with pytest.raises(ArgumentError, match="is not a directory: it is a file; set host_root"):
        hf.check_host_root(str(tmp_path / "root"))


@pytest.mark.parametrize("present,refused", [((), True), (("usr", "var"), True), (("etc",), False), (("sys",), False)])
def test_a_host_root_needs_proc_or_sys_or_etc(tmp_path, present, refused):
    for d in present:
        (tmp_path / d).mkdir()
    if refused:
        with pytest.raises(ArgumentError, match="does not look like a root file system"):
            hf.check_host_root(str(tmp_path))
    else:
        hf.check_host_root(str(tmp_path))


# ---- tri-state: unknown is not false -----------------------------------------------------------------------


def write(root, rel, data):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def reasons(facts):
    return [(q["source"], q["reason"]) for q in facts["problems"]]


def minimal(root):
    """A root with /proc, /sys and /dev in it and nothing NVIDIA: every presence fact reads as a definite no."""
    write(root, "proc/cmdline", "ro quiet\n")
    write(root, "proc/modules", "overlay 196608 0 - Live 0x0000000000000000\n")
    write(root, "proc/sys/kernel/osrelease", "6.8.0-48-generic\n")
    write(root, "proc/sys/kernel/arch", "x86_64\n")
    write(root, "sys/devices/system/node/online", "0\n")
    write(root, "dev/null", "")
    write(root, "etc/os-release", "ID=ubuntu\n")
    return root


def test_on_a_root_that_was_read_and_says_no_the_answers_are_false(tmp_path):
    f = hf.collect(str(minimal(tmp_path)))
    assert f["nvidia_driver"]["loaded"] is False and f["modules"]["nouveau"]["loaded"] is False
    assert (f["nouveau"]["blacklisted_modprobe"], f["nouveau"]["blacklisted_cmdline"]) == (False, False)
    assert (f["secure_boot"], f["iommu"]["enabled"], f["kernel"]["headers_present"]) == (
        {"efi": False, "enabled": False, "mok_keys": [], "nvidia_module_signed": None},
        False,
        False,
    )
    assert f["problems"] == []


def test_a_root_without_proc_sys_and_dev_leaves_their_facts_unknown(tmp_path):
    write(tmp_path, "etc/os-release", "ID=ubuntu\n")
    f = hf.collect(str(tmp_path))
    assert f["kernel"] == {
        "release": None,
        "version": None,
        "architecture": None,
        "headers_present": None,
        "headers_path": None,
    }
    assert f["nvidia_driver"]["loaded"] is None and f["modules"]["nvidia"]["loaded"] is None
    assert (f["nouveau"]["loaded"], f["nouveau"]["blacklisted_cmdline"], f["secure_boot"]["efi"]) == (None, None, None)
    assert (f["pci"]["gpu_count"], f["devices"]["nodes"], f["numa"]["node_count"]) == (None, None, None)
    assert [src for src, why in reasons(f) if why == "missing"][:3] == ["/proc", "/sys", "/dev"]


@pytest.fixture(scope="module")
def unreadable_roots(tmp_path_factory):
    """Facts of roots with one file made unreadable (mode 000), collected without DAC override."""
    base = tmp_path_factory.mktemp("unreadable")
    cases = {
        "nvidia-version": "proc/driver/nvidia/version",
        "modprobe": "etc/modprobe.d/blacklist-nouveau.conf",
        "auto-upgrades": "etc/apt/apt.conf.d/20auto-upgrades",
    }
    for name, rel in cases.items():
        root = minimal(base / name)
        write(root, "proc/driver/nvidia/version", NVRM)
        write(root, "etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n")
        write(root, "etc/apt/apt.conf.d/20auto-upgrades", 'APT::Periodic::Unattended-Upgrade "1";\n')
        os.chmod(root / rel, 0)
    return dict(zip(cases, host_damage.unprivileged("--collect", *(base / n for n in cases))))


def test_an_unreadable_nvidia_version_file_is_an_unknown_driver_not_an_unloaded_one(unreadable_roots):
    f = unreadable_roots["nvidia-version"]
    assert f["nvidia_driver"] == {"loaded": None, "version": None, "flavor": None, "gcc": None}
    assert ("/proc/driver/nvidia/version", "unreadable") in reasons(f)


def test_an_unreadable_modprobe_file_leaves_the_blacklist_unknown(unreadable_roots):
    f = unreadable_roots["modprobe"]
    assert f["nouveau"]["blacklisted_modprobe"] is None and f["vfio"]["nouveau_blacklisted"] is None
    assert ("/etc/modprobe.d/blacklist-nouveau.conf", "unreadable") in reasons(f)
    assert unreadable_roots["nvidia-version"]["nouveau"]["blacklisted_modprobe"] is True  # the same file, readable


def test_unreadable_apt_settings_leave_unattended_upgrades_unknown(unreadable_roots):
    assert unreadable_roots["auto-upgrades"]["unattended_upgrades"]["enabled"] is None
    assert unreadable_roots["modprobe"]["unattended_upgrades"]["enabled"] is True


def test_a_directory_where_a_file_should_be_is_unreadable(tmp_path):
    (minimal(tmp_path) / "proc" / "driver" / "nvidia" / "version").mkdir(parents=True)
    f = hf.collect(str(tmp_path))
    assert ("/proc/driver/nvidia/version", "unreadable") in reasons(f)
    assert f["nvidia_driver"]["loaded"] is None


def test_garbage_nvidia_version_and_refcnt(tmp_path):
    write(minimal(tmp_path), "proc/driver/nvidia/version", "garbage\n")
    write(tmp_path, "sys/module/nvidia/refcnt", "many\n")
    f = hf.collect(str(tmp_path))
    assert f["nvidia_driver"]["loaded"] is None
    assert f["modules"]["nvidia"] == {"loaded": True, "refcount": None}
    assert {("/proc/driver/nvidia/version", "malformed"), ("/sys/module/nvidia/refcnt", "malformed")} <= set(reasons(f))


def test_a_text_file_with_nul_bytes_is_malformed_not_read(tmp_path):
    write(minimal(tmp_path), "etc/modprobe.d/blacklist-nouveau.conf", b"blacklist nouveau\n\x00\x00\x00")
    f = hf.collect(str(tmp_path))
    assert ("/etc/modprobe.d/blacklist-nouveau.conf", "malformed") in reasons(f)
    assert f["nouveau"]["blacklisted_modprobe"] is None


@pytest.mark.parametrize("raw", [b"\x06\x00", b"\x06\x00\x00\x00\x07", b"\x06\x00\x00\x00\x01\x00"])
def test_a_secure_boot_variable_that_is_not_one_value_byte_is_unknown(tmp_path, raw):
    write(minimal(tmp_path), system.SECURE_BOOT_VAR, raw)
    f = hf.collect(str(tmp_path))
    assert (f["secure_boot"]["efi"], f["secure_boot"]["enabled"]) == (True, None)
    assert ("/" + system.SECURE_BOOT_VAR, "malformed") in reasons(f)


def test_an_efi_boot_without_a_secure_boot_variable_has_secure_boot_off(tmp_path):
    write(minimal(tmp_path), "sys/firmware/efi/efivars/BootCurrent-8be4df61-93ca-11d2-aa0d-00e098032b8c", "x")
    sb = hf.collect(str(tmp_path))["secure_boot"]
    assert (sb["efi"], sb["enabled"], sb["mok_keys"]) == (True, False, [])


def test_an_efi_boot_without_efivarfs_mounted_has_secure_boot_unknown_not_off(tmp_path):
    write(minimal(tmp_path), "sys/firmware/efi/fw_platform_size", "64\n")
    f = hf.collect(str(tmp_path))
    assert (f["secure_boot"]["efi"], f["secure_boot"]["enabled"], f["secure_boot"]["mok_keys"]) == (True, None, None)
    assert ("/sys/firmware/efi/efivars", "missing") in [(p["source"], p["reason"]) for p in f["problems"]]


# ---- nothing vanishes --------------------------------------------------------------------------------------


def gpu(root, addr, target=None, **attrs):
    """An NVIDIA GPU at ``addr``: sys/bus/pci/devices/<addr> links to sys/devices/pci0000:00/<addr>."""
    values = {"vendor": "0x10de", "device": "0x2330", "class": "0x030200", "numa_node": "0"}
    values.update(attrs)
    for k, v in values.items():
        if v is not None:
            write(root, f"sys/devices/pci0000:00/{addr}/{k}", v + "\n")
    link = root / "sys/bus/pci/devices" / addr
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target or f"../../../devices/pci0000:00/{addr}")


def test_a_gpu_whose_sysfs_link_dangles_is_kept_counted_as_unresolved_and_named(tmp_path):
    gpu(minimal(tmp_path), "0000:18:00.0")
    gpu(tmp_path, "0000:2a:00.0", target="../../../devices/pci0000:00/gone/0000:2a:00.0")
    p = hf.collect(str(tmp_path))
    assert [(d["address"], d["kind"]) for d in p["pci"]["devices"]] == [("0000:18:00.0", "gpu"), ("0000:2a:00.0", None)]
    assert (p["pci"]["gpu_count"], p["pci"]["unresolved_count"]) == (1, 1)
    assert ("/sys/bus/pci/devices/0000:2a:00.0", "dangling") in reasons(p)
    assert p["fabric_manager"]["required"] is None  # the unresolved device may be an NVSwitch


@pytest.mark.parametrize("attr,value", [("vendor", None), ("vendor", "nvidia"), ("class", "3d controller")])
def test_a_gpu_whose_vendor_or_class_cannot_be_read_is_kept_unresolved(tmp_path, attr, value):
    gpu(minimal(tmp_path), "0000:18:00.0", **{attr: value})
    p = hf.collect(str(tmp_path))
    assert [(d["address"], d["kind"]) for d in p["pci"]["devices"]] == [("0000:18:00.0", None)]
    assert ("/sys/bus/pci/devices/0000:18:00.0/" + attr, "malformed" if value else "missing") in reasons(p)


def test_a_malformed_numa_node_is_unknown_with_a_problem(tmp_path):
    gpu(minimal(tmp_path), "0000:18:00.0", numa_node="node0")
    p = hf.collect(str(tmp_path))
    assert p["pci"]["devices"][0]["numa_node"] is None and p["pci"]["gpu_count"] == 1
    assert ("/sys/bus/pci/devices/0000:18:00.0/numa_node", "malformed") in reasons(p)


def test_a_dev_char_link_to_a_node_that_is_gone_is_kept_and_named(tmp_path):
    write(minimal(tmp_path), "dev/nvidia0", "")
    (tmp_path / "dev/char").mkdir()
    (tmp_path / "dev/char/195:0").symlink_to("../nvidia0")
    (tmp_path / "dev/char/195:1").symlink_to("../nvidia1")
    d = hf.collect(str(tmp_path))
    assert d["devices"]["char_links"] == {"195:0": "../nvidia0", "195:1": "../nvidia1"}
    assert d["devices"]["char_links_dangling"] == ["195:1"]
    assert ("/dev/char/195:1", "dangling") in reasons(d)


def test_a_dangling_kernel_build_link_means_no_headers_and_is_named(tmp_path):
    (minimal(tmp_path) / "lib/modules/6.8.0-48-generic").mkdir(parents=True)
    (tmp_path / "lib/modules/6.8.0-48-generic/build").symlink_to("/usr/src/linux-headers-6.8.0-48-generic")
    k = hf.collect(str(tmp_path))
    assert (k["kernel"]["headers_present"], k["kernel"]["headers_path"]) == (False, None)
    assert ("/lib/modules/6.8.0-48-generic/build", "dangling") in reasons(k)
    (tmp_path / "usr/src/linux-headers-6.8.0-48-generic").mkdir(parents=True)
    assert hf.collect(str(tmp_path))["kernel"]["headers_path"] == "/usr/src/linux-headers-6.8.0-48-generic"


# ---- the facts an admission checklist needs ----------------------------------------------------------------


@pytest.mark.parametrize(
    "files,arch",
    [
        ({"proc/sys/kernel/arch": "aarch64\n", "boot/config-REL": "CONFIG_X86_64=y\n"}, "aarch64"),
        ({"boot/config-REL": "# CONFIG_X86_64 is not set\nCONFIG_ARM64=y\n"}, "aarch64"),
        ({"lib/modules/REL/config": "CONFIG_PPC64=y\nCONFIG_CPU_LITTLE_ENDIAN=y\n"}, "ppc64le"),
        ({}, None),
    ],
)
def test_the_architecture_comes_from_the_arch_file_else_the_kernel_config(tmp_path, files, arch):
    write(tmp_path, "proc/sys/kernel/osrelease", "6.1.0-26-cloud\n")
    for rel, text in files.items():
        write(tmp_path, rel.replace("REL", "6.1.0-26-cloud"), text)
    f = hf.collect(str(tmp_path))
    assert f["kernel"]["architecture"] == arch
    assert (("/proc/sys/kernel/arch", "missing") in reasons(f)) == (arch is None)


@pytest.mark.parametrize(
    "release,arch", [("6.1.0-26-amd64", "x86_64"), ("6.1.112-122.189.amzn2023.aarch64", "aarch64")]
)
def test_the_architecture_comes_from_the_release_name_when_nothing_else_says(tmp_path, release, arch):
    write(tmp_path, "proc/sys/kernel/osrelease", release + "\n")
    assert hf.collect(str(tmp_path))["kernel"]["architecture"] == arch


def test_numa_nodes_from_the_online_range_list(tmp_path):
    write(minimal(tmp_path), "sys/devices/system/node/online", "0-1,3\n")
    assert hf.collect(str(tmp_path))["numa"] == {"node_count": 3, "nodes": [0, 1, 3]}
    write(tmp_path, "sys/devices/system/node/online", "zero\n")
    f = hf.collect(str(tmp_path))
    assert f["numa"] == {"node_count": None, "nodes": None}
    assert ("/sys/devices/system/node/online", "malformed") in reasons(f)


def test_the_rancher_endpoint_of_a_drop_in_selects_the_system_containerd(tmp_path):
    write(tmp_path, "etc/rancher/k3s/config.yaml", "write-kubeconfig-mode: '0644'\n")
    write(tmp_path, "etc/rancher/k3s/config.yaml.d/90-runtime.yaml", "container-runtime-endpoint: /run/cri.sock\n")
    assert container_runtime.rancher_endpoint(reader.Reader(str(tmp_path)), "k3s") == ("/run/cri.sock", True)


def test_an_unreadable_rancher_config_leaves_the_containerd_in_use_unknown(tmp_path):
    write(minimal(tmp_path), "etc/rancher/rke2/config.yaml", "\x00")
    write(tmp_path, "run/k3s/containerd/containerd.sock", "")
    cr = hf.collect(str(tmp_path))["container_runtime"]
    assert (cr["name"], cr["config_source"], cr["socket_present"]) == ("containerd", None, None)


def test_a_containerd_drop_in_overrides_the_base_key_by_key():
    base = {"version": 3, "plugins": {"io.containerd.cri.v1.runtime": {"containerd": {"default_runtime_name": "runc"}}}}
    drop_in = {"plugins": {"io.containerd.cri.v1.runtime": {"enable_cdi": True}}}
    merged = runtime_configs.deep_merge(base, drop_in)
    summary = runtime_configs.containerd_summary(merged)
    assert (summary["default_runtime"], summary["cdi_enabled"]) == ("runc", True)
    assert base["plugins"]["io.containerd.cri.v1.runtime"] == {"containerd": {"default_runtime_name": "runc"}}


@pytest.mark.parametrize(
    "version, nri, enabled",
    [
        (2, '[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n', True),
        (2, '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n', False),  # as containerd 1.7 ships it
        (2, "", None),  # containerd's default: off in 1.7, on from 2.0 - the node's runtime version decides
        (2, '[plugins."io.containerd.nri.v1.nri"]\n  socket_path = "/var/run/nri/nri.sock"\n', None),
        (3, "", True),  # a version 3 config is containerd 2.x, whose NRI is on unless disabled
        (3, "[plugins.'io.containerd.nri.v1.nri']\n  disable = true\n", False),
    ],
)
def test_containerd_nri_follows_its_disable_setting_else_the_default_the_config_layout_implies(
    tmp_path, version, nri, enabled
):
    write(minimal(tmp_path), "etc/kubernetes/kubelet.conf", "")
    write(tmp_path, "etc/containerd/config.toml", "version = %d\n" % version + nri)
    f = hf.collect(str(tmp_path))
    assert f["container_runtime"]["config"]["nri_enabled"] is enabled
    assert f["container_runtime"]["config"]["version"] == version


@pytest.mark.parametrize(
    "nri, enabled",
    [("[crio.nri]\nenable_nri = true\n", True), ("[crio.nri]\nenable_nri = false\n", False), ("", None)],
)
def test_crio_nri_is_enabled_by_enable_nri_in_a_drop_in(tmp_path, nri, enabled):
    write(minimal(tmp_path), "etc/crio/crio.conf", '[crio.runtime]\ncgroup_manager = "systemd"\n')
    write(tmp_path, "etc/crio/crio.conf.d/10-nri.conf", nri)
    cr = hf.collect(str(tmp_path))["container_runtime"]
    assert (cr["name"], cr["config"]["nri_enabled"]) == ("cri-o", enabled)


def test_an_unreadable_runtime_config_leaves_nri_unknown(tmp_path):
    write(minimal(tmp_path), "etc/kubernetes/kubelet.conf", "")
    write(tmp_path, "etc/containerd/config.toml", '[plugins."io.containerd.nri.v1.nri"\n')
    f = hf.collect(str(tmp_path))
    assert f["container_runtime"]["config"] is None  # so nri_enabled is null: not read
    assert ("/etc/containerd/config.toml", "malformed") in reasons(f)


def test_modprobe_files_in_etc_hide_those_of_the_same_name_in_lib(tmp_path):
    write(minimal(tmp_path), "lib/modprobe.d/nvidia.conf", "blacklist nouveau\n")
    write(tmp_path, "etc/modprobe.d/nvidia.conf", "# nouveau allowed here\n")
    f = hf.collect(str(tmp_path))
    assert f["nouveau"]["blacklisted_modprobe"] is False and f["nouveau"]["blacklist_files"] == []


def test_cdi_spec_version_and_device_names(tmp_path):
    spec = {"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0"}, {"name": "all"}, {}]}
    write(tmp_path, "etc/cdi/nvidia.json", json.dumps(spec))
    write(tmp_path, "var/run/cdi/bad.yaml", "cdiVersion: 0.5.0\n")
    c = hf.collect(str(tmp_path))["cdi"]
    assert c["specs"] == [
        {"path": "/etc/cdi/nvidia.json", "kind": "nvidia.com/gpu", "cdi_version": "0.6.0", "devices": ["0", "all"]},
        {"path": "/var/run/cdi/bad.yaml", "kind": None, "cdi_version": None, "devices": None},
    ]
    assert c["nvidia"] is True  # an nvidia.com spec was read, whatever the other one is


def test_without_pyyaml_yaml_sources_are_problems(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "_yaml", None)
    write(tmp_path, "etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\ndevices: []\n")
    f = hf.collect(str(tmp_path))
    assert f["cdi"] == {
        "specs": [{"path": "/etc/cdi/nvidia.yaml", "kind": None, "cdi_version": None, "devices": None}],
        "nvidia": None,
    }
    assert ("/etc/cdi/nvidia.yaml", "yaml_parser_unavailable") in reasons(f)


def test_docker_daemon_json(tmp_path):
    write(
        tmp_path,
        "etc/docker/daemon.json",
        json.dumps(
            {
                "default-runtime": "nvidia",
                "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},
                "features": {"cdi": True},
                "exec-opts": ["native.cgroupdriver=cgroupfs"],
            }
        ),
    )
    cr = hf.collect(str(tmp_path))["container_runtime"]
    assert (cr["name"], cr["config_source"], cr["socket_present"]) == ("docker", "system", False)
    assert (
        cr["config"]
        == cr["docker"]
        == {
            "runtimes": ["nvidia"],
            "default_runtime": "nvidia",
            "nvidia_runtime": True,
            "nvidia_runtimes": {
                "nvidia": {"binary": "nvidia-container-runtime", "runtime_type": None, "systemd_cgroup": False}
            },
            "cdi_enabled": True,
        }
    )


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", ""])
def test_bad_daemon_json_is_reported(tmp_path, content):
    write(tmp_path, "etc/docker/daemon.json", content)
    f = hf.collect(str(tmp_path))
    assert f["container_runtime"]["config"] is None
    assert ("/etc/docker/daemon.json", "malformed") in reasons(f)


def test_k0s_distribution(tmp_path):
    write(
        tmp_path,
        "etc/k0s/containerd.d/nvidia.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\nruntime_type = "x"\n',
    )
    f = hf.collect(str(tmp_path))
    assert f["kubernetes"]["distribution"] == "k0s"
    assert (f["container_runtime"]["socket"], f["container_runtime"]["config_source"]) == (
        "/run/k0s/containerd.sock",
        "distribution",
    )
    assert f["container_runtime"]["config_path"] == "/etc/k0s/containerd.d/nvidia.toml"
    assert f["container_runtime"]["config"]["nvidia_runtime"] is True


def test_without_a_toml_parser_toml_sources_become_problems(monkeypatch):
    monkeypatch.setattr(reader, "_toml", None)
    f = hf.collect(str(HOSTS / "ubuntu2204-kubeadm-containerd"))
    assert f["container_runtime"]["config"] is None
    assert set(reasons(f)) == {
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
    system.parse_apt_conf(text)
    nvidia_stack.parse_kv(text)
    modprobe.parse_modprobe(text)
    kernel.parse_cmdline(text)
    kernel.config_architecture(kernel.parse_kernel_config(text))
    pci.parse_ranges(text)
    runtime_configs.template_toml(text)
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
        runtime_configs.containerd_summary(data)  # must not raise on any parsed shape


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=10,
    )
)
def test_summaries_tolerate_any_shape(doc):
    doc = doc if isinstance(doc, dict) else {"plugins": doc}
    for fn in (runtime_configs.containerd_summary, runtime_configs.crio_summary, runtime_configs.docker_summary):
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
    black, opts, bad = modprobe.parse_modprobe("\n".join(lines))
    assert ("nouveau" in black) == any(x in lines for x in ("blacklist nouveau", "install nouveau /bin/false"))
    assert (opts.get("nouveau", {}).get("modeset") == "0") == ("options nouveau modeset=0" in lines)
    assert bad == 0
