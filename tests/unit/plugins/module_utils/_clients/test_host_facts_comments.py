"""Comments are never configuration: one spec per format gpu_host_facts reads (apt.conf, modprobe.d, os-release,
kernel .config, TOML, JSON, the Go templates of k3s and RKE2, YAML, INI, validator KEY=value files). Each writes a
file where only a comment says yes and checks that the fact says no."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import (
    kernel,
    modprobe,
    nvidia_stack,
    system,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.runtime_configs import (
    template_toml,
)


def host(tmp_path, files):
    """gpu_host facts of a root holding only ``files`` (path -> text)."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return collect(str(tmp_path))


def problems(facts):
    return [(p["source"], p["reason"]) for p in facts["problems"]]


APT_COMMENTED = """// packages kept back from unattended upgrades
Unattended-Upgrade::Package-Blacklist {
    // the kernel was to be held here, but only in a comment
//  "linux-";
    /* "linux-image-";
       "linux-headers-"; */
    # "linux-modules-";
    "libc6$";
};
"""


def test_apt_comments_of_every_kind_are_dropped():
    conf, bad = system.parse_apt_conf(APT_COMMENTED + '//APT::Periodic::Unattended-Upgrade "1";\n')
    assert conf == {"unattended-upgrade::package-blacklist": ["libc6$"]} and not bad


def test_apt_commented_kernel_blacklist_and_schedule_are_not_configuration(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/apt/apt.conf.d/50unattended-upgrades": APT_COMMENTED,
            "etc/apt/apt.conf.d/20auto-upgrades": '// APT::Periodic::Unattended-Upgrade "1";\n'
            'APT::Periodic::Unattended-Upgrade "0";\n',
        },
    )
    assert f["unattended_upgrades"] == {"tool": "unattended-upgrades", "enabled": False, "kernel_blacklisted": False}


def test_apt_nested_scopes_and_a_later_file_win():
    conf, bad = system.parse_apt_conf('APT { Periodic { Unattended-Upgrade "1"; }; };\nAPT::Periodic::X "y";')
    assert conf == {"apt::periodic::unattended-upgrade": "1", "apt::periodic::x": "y"} and not bad
    assert system.parse_apt_conf("APT { Periodic {")[1] is True  # unbalanced: malformed


def test_modprobe_hash_comments_whole_line_and_trailing():
    black, opts, bad = modprobe.parse_modprobe(
        "# blacklist nouveau\n  #options nouveau modeset=0\nblacklist nvidiafb # blacklist nouveau\n"
    )
    assert (black, opts, bad) == ({"nvidiafb"}, {}, 0)


def test_modprobe_commented_blacklist_is_not_a_blacklist(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/modprobe.d/blacklist-nouveau.conf": "# blacklist nouveau\n# options nouveau modeset=0\n",
            "proc/cmdline": "ro quiet\n",
        },
    )
    assert (f["nouveau"]["blacklisted_modprobe"], f["nouveau"]["modeset_disabled"]) == (False, False)


def test_os_release_comments_are_skipped():
    data, bad = system.parse_os_release('# ID=fedora\nID=ubuntu\n  # VERSION_ID="9"\nVERSION_ID="22.04"\n')
    assert (data, bad) == ({"ID": "ubuntu", "VERSION_ID": "22.04"}, 0)


def test_kernel_config_not_set_lines_are_comments():
    config = kernel.parse_kernel_config("# CONFIG_X86_64 is not set\nCONFIG_ARM64=y\n# CONFIG_PPC64=y\n")
    assert config == {"CONFIG_ARM64": "y"} and kernel.config_architecture(config) == "aarch64"


def test_toml_comments_in_a_containerd_config(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/containerd/config.toml": 'version = 2\n# default_runtime_name = "nvidia"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc" # not nvidia\n'
            '#[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n',
        },
    )
    cfg = f["container_runtime"]["config"]
    assert (cfg["default_runtime"], cfg["runtimes"], cfg["nvidia_runtime"]) == ("runc", [], False)


def test_json_has_no_comments_so_a_commented_daemon_json_is_malformed_not_half_read(tmp_path):
    f = host(tmp_path, {"etc/docker/daemon.json": '{\n  // "default-runtime": "nvidia",\n  "runtimes": {}\n}\n'})
    assert f["container_runtime"]["docker"] is None and f["container_runtime"]["config"] is None
    assert ("/etc/docker/daemon.json", "malformed") in problems(f)


@pytest.mark.parametrize("comment", ["{{/* %s */}}", "{{- /* %s */ -}}"])
def test_go_template_comments_are_not_containerd_configuration(comment):
    runtime = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "x"\n'
    text, base = template_toml('{{ template "base" . }}\n' + comment % runtime)
    assert base is True and text.strip() == ""


def test_go_template_comments_in_a_k3s_template(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/rancher/k3s/config.yaml": "# container-runtime-endpoint: /run/containerd/containerd.sock\n",
            "var/lib/rancher/k3s/agent/etc/containerd/config.toml": "version = 2\n",
            "var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl": "{{/* no base: the whole config */}}\n"
            "version = 2\n{{/*\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
            '  default_runtime_name = "nvidia"\n*/}}\n# default_runtime_name = "nvidia"\n',
        },
    )
    cr = f["container_runtime"]
    assert cr["config_source"] == "distribution"  # the YAML endpoint line is a comment
    assert cr["template"] == {
        "extends_base": False,
        "config": {
            "version": 2,
            "runtimes": [],
            "default_runtime": None,
            "nvidia_runtime": False,
            "nvidia_runtime_binary": None,
            "nvidia_runtimes": {},
            "systemd_cgroup": None,
            "cdi_enabled": None,
            "nri_enabled": None,
            "imports": [],
        },
    }


def test_yaml_comments_in_rke2_config(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/rancher/rke2/config.yaml": "# container-runtime-endpoint: unix:///run/containerd/containerd.sock\n"
            "token: abc # container-runtime-endpoint: /run/x.sock\n",
            "etc/rancher/rke2/config.yaml.d/50-runtime.yaml": "container-runtime-endpoint: "
            "unix:///run/containerd/containerd.sock # the system containerd\n",
        },
    )
    cr = f["container_runtime"]
    assert (cr["config_source"], cr["socket"]) == ("system", "/run/containerd/containerd.sock")


def test_ini_comments_in_dnf_automatic(tmp_path):
    f = host(
        tmp_path,
        {
            "etc/dnf/automatic.conf": "[commands]\n# apply_updates = yes\n; apply_updates = yes\napply_updates = no\n",
            "etc/dnf/dnf.conf": "[main]\n# exclude=kernel*\ngpgcheck=1\n",
            "etc/systemd/system/timers.target.wants/dnf-automatic.timer": "",
        },
    )
    assert f["unattended_upgrades"] == {"tool": "dnf-automatic", "enabled": False, "kernel_blacklisted": False}


def test_validator_status_comments_are_skipped():
    assert nvidia_stack.parse_kv("# IS_HOST_DRIVER=true\nIS_HOST_DRIVER=false\n\n") == ({"IS_HOST_DRIVER": "false"}, 0)
