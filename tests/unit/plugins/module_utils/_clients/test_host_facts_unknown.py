"""Specification of gpu_host_facts' unknowns: a fact whose source is missing, unreadable or a link to nowhere is
null with a problem, never false, zero or an empty list; the kernel command line is read as the kernel and libkmod
read it (quotes, repeats merged where libkmod merges them)."""

from __future__ import annotations

import os

from test_host_facts import minimal, reasons, write

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import kernel

NVML = "run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"


def test_modprobe_blacklist_given_twice_blacklists_both_modules_as_libkmod_does():
    args = kernel.parse_cmdline("ro modprobe.blacklist=nouveau quiet modprobe.blacklist=nvidiafb")
    assert args["modprobe.blacklist"] == "nouveau,nvidiafb"


def test_other_repeated_arguments_keep_the_last_value_as_the_kernel_does():
    assert kernel.parse_cmdline("iommu=off iommu=pt")["iommu"] == "pt"


def test_double_quotes_hold_blanks_in_one_argument():
    args = kernel.parse_cmdline('dyndbg="module nvidia +p" ro')
    assert args == {"dyndbg": "module nvidia +p", "ro": True}


def test_nouveau_blacklisted_by_an_earlier_of_two_modprobe_blacklist_arguments(tmp_path):
    write(minimal(tmp_path), "proc/cmdline", "ro modprobe.blacklist=nouveau modprobe.blacklist=nvidiafb\n")
    assert hf.collect(str(tmp_path))["nouveau"]["blacklisted_cmdline"] is True


def test_a_dashed_module_name_on_the_command_line_matches_as_modprobe_matches_it(tmp_path):
    write(minimal(tmp_path), "proc/cmdline", "ro module_blacklist=nvidia-drm,nouveau\n")
    assert hf.collect(str(tmp_path))["nouveau"]["blacklisted_cmdline"] is True


def test_an_empty_command_line_is_a_problem_not_a_pass(tmp_path):
    write(minimal(tmp_path), "proc/cmdline", "\n")
    f = hf.collect(str(tmp_path))
    assert f["cmdline"] == {"raw": None, "args": None}
    assert ("/proc/cmdline", "malformed") in reasons(f)
    assert f["nouveau"]["blacklisted_cmdline"] is None and f["iommu"]["cmdline"] is None
    assert f["vfio"]["ids"] is None  # neither the command line nor modprobe.d says "none"


def test_an_unread_command_line_leaves_its_lists_unknown(tmp_path):
    os.unlink(minimal(tmp_path) / "proc/cmdline")
    f = hf.collect(str(tmp_path))
    assert (f["cmdline"]["args"], f["iommu"]["cmdline"]) == (None, None)


def test_a_dangling_nvml_library_is_not_the_library(tmp_path):
    write(minimal(tmp_path), "run/nvidia/driver/.keep", "")
    link = tmp_path / NVML
    link.parent.mkdir(parents=True)
    link.symlink_to("libnvidia-ml.so.570.124.06")  # the versioned file is gone
    f = hf.collect(str(tmp_path))
    assert f["operator_driver"] == {"root": "/run/nvidia/driver", "present": True, "nvml_library": None}
    assert ("/" + NVML, "dangling") in reasons(f)


def test_a_pci_tree_that_cannot_be_read_leaves_devices_and_vfio_counts_unknown_not_zero(tmp_path):
    pci = minimal(tmp_path) / "sys/bus/pci/devices"
    pci.parent.mkdir(parents=True)
    pci.symlink_to("devices")  # a loop: the lookup fails as under an unreadable directory (root reads mode 000)
    f = hf.collect(str(tmp_path))
    assert (f["pci"]["devices"], f["pci"]["gpu_count"]) == (None, None)
    assert (f["vfio"]["devices"], f["vfio"]["gpu_count"]) == (None, None)
    assert ("/sys/bus/pci/devices", "loop") in reasons(f)


def test_a_root_that_was_read_says_empty_lists_not_unknown(tmp_path):
    for empty in ("sys/bus/pci/devices", "etc/modprobe.d", "dev/char"):
        (minimal(tmp_path) / empty).mkdir(parents=True, exist_ok=True)
    f = hf.collect(str(tmp_path))
    assert (f["pci"]["devices"], f["vfio"]["devices"], f["vfio"]["gpu_count"], f["vfio"]["ids"]) == ([], [], 0, [])
    assert (f["iommu"]["cmdline"], f["devices"]["char_links_dangling"], f["os"]["id_like"]) == ({}, [], [])
    assert f["nouveau"]["blacklist_files"] == []


def test_an_unreadable_os_release_leaves_id_like_unknown(tmp_path):
    os.unlink(minimal(tmp_path) / "etc/os-release")
    f = hf.collect(str(tmp_path))
    assert f["os"]["id_like"] is None and ("/usr/lib/os-release", "missing") in reasons(f)


def test_cdi_under_var_run_that_is_run_is_one_directory_listed_once(tmp_path):
    write(minimal(tmp_path), "run/cdi/nvidia.yaml", "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices: []\n")
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    specs = hf.collect(str(tmp_path))["cdi"]["specs"]
    assert [s["path"] for s in specs] == ["/var/run/cdi/nvidia.yaml"]
