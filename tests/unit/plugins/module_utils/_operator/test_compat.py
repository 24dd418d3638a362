# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Specs for the compatibility matrix (_compat_data) and the questions _compat answers over it.

The expected values are read off gpu-operator.md sections 2 and 11; a change to a row must change a line here.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat as c
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator import compat_data as d


def test_the_matrix_covers_operator_24_9_to_26_7():
    assert c.known_releases() == ["24.9", "25.3", "25.10", "26.3", "26.7"]


def test_every_row_cites_its_source():
    for key, row in d.RELEASES.items():
        parts = ("support", "drivers", "chart_default_driver", "dra_driver", "kernel_module_type_option")
        for part in parts + ("service_monitor",):
            assert row["source"][part], (key, part)
    for table in (d.CUDA_DRIVERS, d.ARCH_KERNEL_MODULE):
        for key, row in table.items():
            assert row["source"], key
    assert d.KERNEL_MODULE_TYPE_AUTO_MIN_DRIVER["source"]


@pytest.mark.parametrize(
    "release, k8s, containerd",
    [
        ("24.9", ["1.24", "1.31"], ["1.4", "1.7"]),
        ("25.3", ["1.29", "1.33"], ["1.6", "2.1"]),
        ("25.10", ["1.30", "1.34"], ["1.7", "2.1"]),
        ("26.3", ["1.32", "1.36"], ["1.7", "2.2"]),
        ("26.7", ["1.32", "1.37"], ["1.8", "2.3"]),
    ],
)
def test_kubernetes_and_containerd_ranges_per_release(release, k8s, containerd):
    row = c.release(release)
    assert row["kubernetes"] == k8s
    assert row["containerd"] == containerd
    assert row["release"] == release and row["data_version"] == d.DATA_VERSION


@pytest.mark.parametrize(
    "operator, dra_driver",
    [
        ("v24.9.2", None),
        ("v25.3.4", None),
        ("v25.10.1", None),
        ("v26.3.3", None),
        ("v26.7.0", "v0.5.0"),
        ("26.7.1", "v0.5.0"),
    ],
)
def test_only_26_7_deploys_a_dra_driver_and_it_is_dra_driver_nvidia_gpu_v0_5_0(operator, dra_driver):
    assert c.dra_driver(operator) == dra_driver
    assert c.release(operator)["dra_driver"] == dra_driver


@pytest.mark.parametrize(
    "release, default, chart_default",
    [
        ("24.9", "550.127.08", "550.144.03"),
        ("25.3", "580.82.07", "580.82.07"),
        ("25.10", "580.95.05", "580.105.08"),
        ("26.3", "580.126.20", "580.126.20"),
        ("26.7", "595.91.07", "595.91.07"),
    ],
)
def test_default_drivers_from_the_life_cycle_page_and_the_chart(release, default, chart_default):
    assert d.RELEASES[release]["default_driver"] == default
    assert c.default_driver("v%s.0" % release) == chart_default
    assert c.driver_supported(release, default) and c.driver_supported(release, chart_default)


def test_release_key_takes_chart_versions_and_rejects_unknown_releases_naming_the_known_ones():
    assert c.release_key("v25.10.1") == "25.10"
    assert c.release_key("26.7") == "26.7"
    assert c.release_key("v26.7.1") == "26.7" and c.release("26.7")["latest_patch"] == "26.7.1"
    with pytest.raises(c.CompatError, match=r"'v23\.9\.0'.*24\.9, 25\.3, 25\.10, 26\.3, 26\.7"):
        c.release_key("v23.9.0")
    with pytest.raises(c.CompatError, match="not in the compatibility matrix"):
        c.release_key("latest")


def test_kubernetes_support_is_inclusive_on_major_minor():
    assert c.k8s_supported("v26.7.0", "v1.36.3")
    assert c.k8s_supported("v26.7.1", "v1.37.0") and not c.k8s_supported("v26.3.3", "v1.37.0")
    assert c.k8s_supported("v26.7.0", "1.32.0")
    assert not c.k8s_supported("v26.7.0", "1.31.9")
    assert not c.k8s_supported("v24.9.2", "v1.32.1")
    assert not c.k8s_supported("v26.7.0", None)


def test_containerd_support_reads_the_node_runtime_version():
    assert c.containerd_supported("25.10", "containerd://2.1.3")
    assert not c.containerd_supported("26.7", "containerd://1.7.27")
    assert c.containerd_supported("26.3", "containerd://1.7.27")


def test_os_support_per_release():
    assert c.os_supported("26.7", "ubuntu", "26.04")
    assert not c.os_supported("26.3", "ubuntu", "26.04")
    assert not c.os_supported("26.3", "ubuntu", "20.04")
    assert c.os_supported("25.3", "rhel", "9.5") and not c.os_supported("25.10", "rhel", "9.5")
    assert c.os_supported("26.3", "rocky", "9.7") and not c.os_supported("25.10", "rocky", "9.7")
    assert not c.os_supported("26.7", "debian", "12")


def test_drivers_match_exactly_or_by_a_bare_listed_branch():
    assert c.driver_supported("25.3", "570.124.06")  # "570.x" on the life-cycle page
    assert c.driver_supported("25.3", "535.230.02")  # "535.x"
    assert not c.driver_supported("25.3", "550.127.05")  # only 550.163.01 is listed
    assert not c.driver_supported("26.7", "550.127.08")
    assert c.driver_supported("26.3", "580.159.04")  # recommended
    assert not c.driver_supported("26.7", "")


def test_cuda_minimum_driver_is_the_ga_driver_or_the_major_floor():
    assert c.min_driver_for_cuda("13.0") == "580.65.06"
    assert c.min_driver_for_cuda("13.1") == "580"
    assert c.min_driver_for_cuda("12.0") == "525.60.13"
    assert c.min_driver_for_cuda("12.8") == "525"
    assert c.min_driver_for_cuda("11.4") == "450.80.02"
    with pytest.raises(c.CompatError, match="CUDA 10.2 is not in the compatibility matrix; known majors: 11, 12, 13"):
        c.min_driver_for_cuda("10.2")
    with pytest.raises(c.CompatError, match="not major.minor"):
        c.min_driver_for_cuda("twelve")


def test_driver_at_least_treats_a_bare_branch_as_its_first_release():
    assert c.driver_at_least("580.65.06", "580")
    assert c.driver_at_least("595.91.07", "580.65.06")
    assert not c.driver_at_least("575.57.08", "580")
    assert not c.driver_at_least("570.86.10", "570.124.06")
    assert not c.driver_at_least(None, "525")


def test_kernel_module_flavour_per_architecture():
    assert c.kernel_module("Blackwell") == dict(d.ARCH_KERNEL_MODULE["blackwell"])
    assert c.kernel_module("blackwell")["module"] == "open" and c.kernel_module("blackwell")["required"]
    assert c.kernel_module("hopper")["module"] == "open" and not c.kernel_module("hopper")["required"]
    assert c.kernel_module("volta") == {
        "module": "proprietary",
        "required": True,
        "source": d.ARCH_KERNEL_MODULE["volta"]["source"],
    }
    assert c.kernel_module("ampere")["module"] == "any"
    assert c.kernel_module("rubin") == {"module": "any", "required": False, "source": None}
    assert c.auto_kernel_module_min_driver() == "570.124.06"


def test_matrix_is_a_copy():
    m = c.matrix()
    m["releases"]["26.7"]["kubernetes"][0] = "0.0"
    assert d.RELEASES["26.7"]["kubernetes"][0] == "1.32"
    assert m["data_version"] == d.DATA_VERSION


def test_a_release_supports_the_branches_of_its_driver_containers_each_from_its_earliest_listed_driver():
    branches = c.driver_branches("v26.7.1")
    assert sorted(branches, key=int) == ["535", "580", "595", "610"]
    assert branches["580"] == {
        "drivers": ["580.173.02"],
        "minimum": "580.82.07",  # first listed by 25.3.3
        "designation": "long-term support",
        "long_term": True,
    }
    assert (branches["595"]["minimum"], branches["595"]["long_term"]) == ("595.58.03", False)
    assert branches["610"]["designation"] == "new feature"
    assert branches["535"]["minimum"] == "535"  # 25.3.3 lists "535.x"
    assert c.driver_branches("24.9")["550"]["designation"] is None
    assert c.release("26.7")["driver_branches"] == branches


def test_every_designated_branch_cites_its_source():
    assert set(d.DRIVER_BRANCHES) == {"535", "570", "580", "595", "610"}
    for branch, row in d.DRIVER_BRANCHES.items():
        assert row["source"] and row["designation"], branch


def test_the_nearest_driver_container_is_on_the_same_branch_before_another():
    assert c.driver_branch("580.159.04") == "580" and c.driver_branch("") is None
    assert c.nearest_driver("26.7", "580.159.04") == "580.173.02"
    assert c.nearest_driver("26.7", "570.211.01") == "580.173.02"
    assert c.nearest_driver("26.7", "590.48.01") == "595.91.07"
    assert c.nearest_driver("26.3", "580.65.06") == "580.159.04"


def test_an_unsupported_branch_is_fixed_forward_to_the_nearest_branch_above_it_not_down():
    # 26.7 supports R535, R580, R595 and R610: R550 is nearer R535, but the fix goes forward
    assert c.nearest_driver("26.7", "550.127.05") == "580.173.02"
    assert c.nearest_driver("26.7", "620.10.01").startswith("610.")  # nothing above: the newest branch below


def test_nri_plugin_mode_runtimes_from_the_26_3_release_notes():
    assert d.NRI_PLUGIN["source"] and c.matrix()["nri_plugin"] == d.NRI_PLUGIN
    need = "containerd 1.7.30+ (below 1.8) or 2.1+"
    assert c.nri_runtime("26.7", "containerd://1.7.30") == (True, need)
    assert c.nri_runtime("26.7", "containerd://2.0.6") == (False, need)
    assert c.nri_runtime("26.3", "containerd://2.2.0") == (True, need)
    assert c.nri_runtime("v26.3.2", "cri-o://1.34.0") == (True, "CRI-O >= 1.34 with operator >= 26.3.2")
    assert c.nri_runtime("v26.3.1", "cri-o://1.34.0")[0] is False
    assert c.nri_runtime("25.10", "containerd://2.1.4") == (False, "NRI plugin mode from operator 26.3")
    assert c.nri_runtime("26.7", "docker://28.1.1")[0] is False
