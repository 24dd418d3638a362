"""Specification of the gpu_host_facts sources added for issue #33: /proc/modules in full, the kernel architecture
when neither /proc/sys/kernel/arch nor uname can be read, the runtime's version from dpkg's status file or a Go
binary's build information, and the MOK list's EFI signature lists."""

from __future__ import annotations

import os

from test_host_facts import minimal, reasons, write

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import (
    kernel,
    runtime_versions,
    system,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.reader import Reader

MODULES = (
    "nvidia_uvm 1843200 2 - Live 0x0000000000000000 (PO)\n"
    "nvidia 56532992 19 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
    "overlay 196608 0 - Live 0x0000000000000000\n"
)


def test_every_loaded_module_is_listed_with_its_users_and_taints():
    modules, bad = kernel.parse_proc_modules(MODULES)
    assert bad == 0 and [m["name"] for m in modules] == ["nvidia_uvm", "nvidia", "overlay"]
    assert modules[1] == {
        "name": "nvidia",
        "size": 56532992,
        "refcount": 19,
        "used_by": ["nvidia_uvm", "nvidia_modeset"],
        "state": "live",
        "taints": "POE",
    }


def test_a_proc_modules_line_that_is_not_one_leaves_the_list_unknown(tmp_path):
    write(minimal(tmp_path), "proc/modules", MODULES + "garbage\n")
    f = hf.collect(str(tmp_path))
    assert f["loaded_modules"] == {"count": None, "modules": None} and ("/proc/modules", "malformed") in reasons(f)


def test_the_architecture_comes_from_the_nvidia_module_then_proc_version(tmp_path):
    os.unlink(minimal(tmp_path) / "proc/sys/kernel/arch")
    write(
        tmp_path,
        "proc/version",
        "Linux version 6.8.0-48-generic (buildd@bos02-arm64-009) "
        "(aarch64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld 2.42) #48-Ubuntu SMP\n",
    )
    assert hf.collect(str(tmp_path))["kernel"]["architecture"] == "aarch64"
    write(
        tmp_path,
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  Wed Feb 26 2025\n",
    )
    assert hf.collect(str(tmp_path))["kernel"]["architecture"] == "x86_64"


def test_the_dpkg_status_gives_the_upstream_version_of_installed_packages_only(tmp_path):
    write(
        minimal(tmp_path),
        "var/lib/dpkg/status",
        "Package: containerd\nStatus: install ok installed\nVersion: 1.7.24-0ubuntu1~24.04.1\n\n"
        "Package: cri-o\nStatus: deinstall ok config-files\nVersion: 1.34.1-1\n",
    )
    assert runtime_versions.dpkg_versions(Reader(str(tmp_path))) == {"containerd": "1.7.24"}


def test_a_k3s_binary_reports_the_containerd_fork_it_embeds():
    info = (
        "path\tgithub.com/k3s-io/k3s\nmod\tgithub.com/k3s-io/k3s\t(devel)\t\n"
        "dep\tgithub.com/containerd/containerd/v2\tv2.0.5\th1:x=\n=>\tgithub.com/k3s-io/containerd/v2\tv2.0.5-k3s1\th1:y=\n"
    )
    blob = b"\xff Go buildinf:" + bytes([8, 2]) + b"\0" * 16 + bytes([8]) + b"go1.23.8"
    payload = b"\0" * 16 + info.encode() + b"\0" * 16
    blob += bytes([len(payload) & 0x7F | 0x80, len(payload) >> 7]) + payload
    assert runtime_versions.go_runtime_version(blob, "containerd") == "2.0.5-k3s1"


def test_the_mok_list_is_read_as_efi_signature_lists_and_a_truncated_one_is_malformed():
    x509 = bytes(system.EFI_CERT_X509_GUID)
    sig = b"\x50\xab\x5d\x60" + b"\0" * 12 + b"DER"
    lst = x509 + (28 + len(sig)).to_bytes(4, "little") + (0).to_bytes(4, "little") + len(sig).to_bytes(4, "little")
    assert system.efi_x509_certificates(lst + sig) == [b"DER"]
    assert system.efi_x509_certificates(lst + sig[:-1]) is None
