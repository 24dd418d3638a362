"""Specification of the NVML facts (plugins/module_utils/_clients/nvml.py), run through pynvml's real ctypes path
against the project's fake libnvidia-ml.so.1 (tests/sim/nvml), one fixture profile at a time."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[5]


import pynvml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients import nvml as _nvml

PROFILES = ROOT / "tests" / "sim" / "nvml" / "profiles"
LIB = ROOT / "build" / "nvml" / "libnvidia-ml.so.1"
ARCH = {6: "turing", 7: "ampere", 8: "ada", 9: "hopper"}
COMPUTE = {0: "default", 3: "exclusive_process"}


@pytest.fixture(scope="session")
def fake_lib():
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)
    return str(LIB)


class Fixture:
    """Reads a profile the way the fake library does: gpu.<i>.<field>, else gpu.*.<field>."""

    def __init__(self, name):
        self.data = yaml.safe_load((PROFILES / f"{name}.yml").read_text())

    def __getitem__(self, key):
        return self.data.get(key)

    def gpu(self, i, field):
        v = self.data.get(f"gpu.{i}.{field}", self.data.get(f"gpu.*.{field}"))
        return None if v in (None, "unsupported") else v


@pytest.fixture
def facts_for(fake_lib, monkeypatch):
    def run(profile):
        monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / f"{profile}.yml"))
        return _nvml.collect(pynvml, library_path=fake_lib)

    return run


def expected_gpu(fx, i):
    """What the facts must say for GPU i of a fixture: the fixture value, converted to the documented unit."""

    def g(f):
        return fx.gpu(i, f)

    mig_on = bool(g("mig_current"))
    mask = g("clock_event_reasons")
    n_sbe = g("retired_pages_sbe")
    return {
        "index": i,
        "name": g("name"),
        "uuid": g("uuid"),
        "serial": g("serial"),
        "pci_bus_id": g("bus_id"),
        "pci_device_id": "0x%08X" % g("pci_device_id"),
        "architecture": ARCH.get(g("architecture")) if g("architecture") is not None else None,
        "compute_capability": f"{g('cc_major')}.{g('cc_minor')}" if g("cc_major") is not None else None,
        "memory_total_bytes": g("memory_total"),
        "memory_used_bytes": g("memory_used"),
        "mig": {
            "current": None if g("mig_current") is None else bool(g("mig_current")),
            "pending": None if g("mig_pending") is None else bool(g("mig_pending")),
            "max_devices": g("mig_max_devices") if g("mig_current") is not None else None,
            "devices": [
                {"index": j, "uuid": "MIG-%s-%d" % (g("uuid")[4:], j), "memory_total_bytes": g("mig_memory_total")}
                for j in range(g("mig_devices") or 0)
            ]
            if mig_on
            else [],
        },
        "ecc": {
            "current": None if g("ecc_current") is None else bool(g("ecc_current")),
            "pending": None if g("ecc_pending") is None else bool(g("ecc_pending")),
            "volatile_corrected": g("ecc_volatile_corrected"),
            "volatile_uncorrected": g("ecc_volatile_uncorrected"),
            "aggregate_corrected": g("ecc_aggregate_corrected"),
            "aggregate_uncorrected": g("ecc_aggregate_uncorrected"),
        },
        "retired_pages": {
            "single_bit": n_sbe,
            "double_bit": g("retired_pages_dbe") if n_sbe is not None else None,
            "pending": None if g("retired_pages_pending") is None else bool(g("retired_pages_pending")),
        },
        "remapped_rows": {
            "corrected": g("remapped_rows_corrected"),
            "uncorrected": g("remapped_rows_uncorrected"),
            "pending": None if g("remapped_rows_pending") is None else bool(g("remapped_rows_pending")),
            "failure": None if g("remapped_rows_failure") is None else bool(g("remapped_rows_failure")),
        },
        "temperature_c": g("temperature"),
        "power_usage_w": g("power_usage_mw") / 1000.0 if g("power_usage_mw") is not None else None,
        "power_limit_w": g("power_limit_mw") / 1000.0 if g("power_limit_mw") is not None else None,
        "persistence_mode": None if g("persistence_mode") is None else bool(g("persistence_mode")),
        "compute_mode": COMPUTE.get(g("compute_mode")) if g("compute_mode") is not None else None,
        "clock_event_reasons_mask": mask,
        "clock_event_reasons": _nvml.decode_clock_reasons(mask),
        "pcie_generation": g("pcie_generation"),
        "pcie_width": g("pcie_width"),
        "vbios_version": g("vbios"),
        "fabric": None
        if g("fabric_state") is None
        else {"state": _nvml.FABRIC_STATES[g("fabric_state")], "status": "success", "clique_id": g("fabric_clique_id")},
    }


HEALTHY = ["h100-sxm-8", "a100-mig-8", "l40s-4", "t4-1", "fields-unsupported"]
OK = ["h100-sxm-8", "l40s-4", "t4-1", "fields-unsupported"]


@pytest.mark.parametrize("profile", HEALTHY + ["degraded"])
def test_every_gpu_field_equals_the_fixture(facts_for, profile):
    fx = Fixture(profile)
    facts = facts_for(profile)
    assert facts["available"] is True and facts["reason"] is None
    assert facts["driver_version"] == fx["driver_version"]
    assert facts["nvml_version"] == fx["nvml_version"]
    cuda = fx["cuda_version"]
    assert facts["cuda_driver_version"] == (None if cuda == "unsupported" else f"{cuda // 1000}.{cuda % 1000 // 10}")
    assert facts["gpu_count"] == fx["gpu_count"] == len(facts["gpus"])
    for i, gpu in enumerate(facts["gpus"]):
        got = {k: v for k, v in gpu.items() if k not in ("health", "field_errors")}
        assert got == expected_gpu(fx, i), f"GPU {i}"
        assert "field_errors" not in gpu


@pytest.mark.parametrize("profile", OK)
def test_healthy_profiles_are_ok(facts_for, profile):
    facts = facts_for(profile)
    assert facts["health"] == "ok"
    assert [g["health"] for g in facts["gpus"]] == [{"status": "ok", "reasons": []}] * facts["gpu_count"]


def test_h100_fabric_completed_and_a100_mig_devices(facts_for):
    h100 = facts_for("h100-sxm-8")
    assert {g["fabric"]["state"] for g in h100["gpus"]} == {"completed"}
    a100 = facts_for("a100-mig-8")
    assert [len(g["mig"]["devices"]) for g in a100["gpus"]] == [7, 7, 7, 7, 7, 7, 0, 0]
    assert a100["gpus"][6]["mig"] == {"current": False, "pending": True, "max_devices": 7, "devices": []}
    # GPU 6 has MIG enable pending a GPU reset: the only warning on the node
    assert a100["health"] == "warning"
    assert [g["health"]["status"] for g in a100["gpus"]] == ["ok"] * 6 + ["warning", "ok"]
    assert a100["gpus"][6]["health"]["reasons"] == ["mig_mode_change_pending_reset"]


def test_a_fixture_that_includes_another_changes_only_what_it_names(facts_for):
    r580, base = facts_for("a100-mig-8-r580"), facts_for("a100-mig-8")
    assert (r580["driver_version"], r580["cuda_driver_version"]) == ("580.95.05", "13.0")
    assert base["driver_version"] != "580.95.05"
    assert r580["gpus"] == base["gpus"]


def test_a100_pending_mig_change_is_a_warning():
    gpu = {"mig": {"current": False, "pending": True}}
    assert _nvml.health(gpu) == {"status": "warning", "reasons": ["mig_mode_change_pending_reset"]}


def test_degraded_node_verdicts(facts_for):
    facts = facts_for("degraded")
    verdicts = {g["index"]: g["health"] for g in facts["gpus"]}
    assert facts["health"] == "critical"
    assert verdicts[2] == {"status": "critical", "reasons": ["row_remap_pending_reset_required"]}
    assert verdicts[5] == {"status": "critical", "reasons": ["uncorrectable_ecc_volatile"]}
    assert verdicts[6] == {"status": "critical", "reasons": ["hw_thermal_slowdown", "sw_thermal_slowdown"]}
    assert verdicts[3] == {"status": "warning", "reasons": ["sw_power_cap"]}
    assert [verdicts[i]["status"] for i in (0, 1, 4, 7)] == ["ok"] * 4
    assert facts["gpus"][6]["clock_event_reasons"] == ["sw_thermal_slowdown", "hw_thermal_slowdown"]


def test_t4_reports_retired_pages_and_no_row_remapping(facts_for):
    gpu = facts_for("t4-1")["gpus"][0]
    assert gpu["retired_pages"] == {"single_bit": 2, "double_bit": 0, "pending": False}
    assert gpu["remapped_rows"] == {"corrected": None, "uncorrected": None, "pending": None, "failure": None}
    assert gpu["compute_mode"] == "exclusive_process"
    assert gpu["clock_event_reasons"] == []


def test_unsupported_fields_are_null_not_errors(facts_for):
    gpu = facts_for("fields-unsupported")["gpus"][0]
    assert gpu["name"] == "NVIDIA A10" and gpu["serial"] is None and gpu["temperature_c"] is None
    assert gpu["fabric"] is None and gpu["ecc"]["current"] is None
    assert "error" not in gpu and "field_errors" not in gpu


def test_one_lost_gpu_gets_an_error_entry_and_the_rest_are_read(facts_for):
    facts = facts_for("gpu-lost")
    assert facts["available"] is True and facts["gpu_count"] == 8
    lost = facts["gpus"][4]
    assert lost["error"]["reason"] == "gpu_lost" and lost["error"]["code"] == 15 and "Xid 79" in lost["error"]["hint"]
    assert lost["health"] == {"status": "critical", "reasons": ["gpu_lost"]}
    assert [g["uuid"] for g in facts["gpus"] if g["index"] != 4] == [
        Fixture("gpu-lost").gpu(i, "uuid") for i in range(8) if i != 4
    ]
    assert _nvml.require_gpus_problem(facts) == "GPUs with errors: 4 (gpu_lost)"


@pytest.mark.parametrize(
    "profile,reason",
    [
        ("driver-not-loaded", "driver_not_loaded"),
        ("version-mismatch", "driver_library_mismatch"),
        ("no-permission", "no_permission"),
    ],
)
def test_init_failures_make_nvml_unavailable_with_reason_and_hint(facts_for, profile, reason):
    facts = facts_for(profile)
    assert facts["available"] is False
    assert facts["reason"] == reason
    assert (
        facts["hint"]
        == _nvml.REASONS[{"driver_not_loaded": 9, "driver_library_mismatch": 18, "no_permission": 4}[reason]][1]
    )
    assert facts["gpus"] == [] and facts["gpu_count"] == 0 and facts["driver_version"] is None
    assert _nvml.require_gpus_problem(facts).startswith(f"NVML unavailable ({reason})")


def test_missing_library_path_is_library_not_found(tmp_path):
    facts = _nvml.collect(pynvml, library_path=str(tmp_path / "nope.so.1"))
    assert (facts["available"], facts["reason"]) == (False, "library_not_found")


def _soname_not_found():
    """pynvml's loader on a host without the library on the linker path."""
    if pynvml.nvmlLib is None:
        raise pynvml.NVMLError(12)


def test_library_is_found_under_the_driver_root(fake_lib, monkeypatch, tmp_path):
    monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / "t4-1.yml"))
    monkeypatch.setattr(pynvml, "_LoadNvmlLibrary", _soname_not_found)
    libdir = tmp_path / "run" / "nvidia" / "driver" / "usr" / "lib64"
    libdir.mkdir(parents=True)
    (libdir / "libnvidia-ml.so.1").symlink_to(fake_lib)
    facts = _nvml.collect(pynvml, host_root=str(tmp_path))
    assert facts["library_path"] == str(libdir / "libnvidia-ml.so.1")
    assert facts["available"] is True and facts["gpus"][0]["name"] == "Tesla T4"


def test_no_library_anywhere_is_library_not_found(monkeypatch, tmp_path):
    monkeypatch.setattr(pynvml, "_LoadNvmlLibrary", _soname_not_found)
    facts = _nvml.collect(pynvml, host_root=str(tmp_path))
    assert facts["reason"] == "library_not_found" and "driver_root" in facts["hint"]


@pytest.mark.parametrize("code,reason", [(999, "unknown"), (4, "no_permission"), (10, "nvml_error_10")])
def test_a_failing_field_is_recorded_not_raised(facts_for, monkeypatch, code, reason):
    def boom(handle):
        raise pynvml.NVMLError(code)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetVbiosVersion", boom)
    gpu = facts_for("t4-1")["gpus"][0]
    assert gpu["vbios_version"] is None
    assert gpu["field_errors"] == [{"field": "vbios_version", "reason": reason, "code": code}]
    assert gpu["name"] == "Tesla T4"


def test_function_not_found_is_null(facts_for, monkeypatch):
    monkeypatch.setattr(
        pynvml, "nvmlDeviceGetGpuFabricInfo", lambda h, i: (_unused for _unused in ()).throw(pynvml.NVMLError(13))
    )
    gpu = facts_for("h100-sxm-8")["gpus"][0]
    assert gpu["fabric"] is None and "field_errors" not in gpu


def test_fabric_in_progress_is_a_warning():
    gpu = {"fabric": {"state": "in_progress", "status": "success", "clique_id": 1}}
    assert _nvml.health(gpu)["reasons"] == ["fabric_not_registered"]


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_clock_reason_decoding_names_exactly_the_set_bits(mask):
    names = _nvml.decode_clock_reasons(mask)
    assert names == [n for bit, n in _nvml.CLOCK_EVENT_REASONS if mask & bit]
    assert len(set(names)) == len(names)


@given(st.integers(min_value=0, max_value=100000))
def test_every_nvml_code_maps_to_a_reason_and_hint(code):
    reason, hint = _nvml.reason_for(code)
    assert reason and hint


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "remapped_rows": st.fixed_dictionaries({"pending": st.booleans(), "failure": st.booleans()}),
            "ecc": st.fixed_dictionaries(
                {"volatile_uncorrected": st.integers(0, 5), "aggregate_uncorrected": st.integers(0, 5)}
            ),
            "clock_event_reasons": st.lists(
                st.sampled_from([n for _unused, n in _nvml.CLOCK_EVENT_REASONS]), unique=True
            ),
        },
    )
)
def test_health_is_ok_exactly_when_there_are_no_reasons(gpu):
    verdict = _nvml.health(gpu)
    assert verdict["status"] in ("ok", "warning", "critical")
    assert (verdict["status"] == "ok") == (verdict["reasons"] == [])


def test_a_gpu_lost_in_the_middle_of_reading_stops_that_gpu_only(facts_for, monkeypatch):
    real = pynvml.nvmlDeviceGetTemperature
    calls = {"n": 0}

    def lost_once(handle, sensor):
        calls["n"] += 1
        if calls["n"] == 2:
            raise pynvml.NVMLError(15)
        return real(handle, sensor)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetTemperature", lost_once)
    facts = facts_for("l40s-4")
    gpu = facts["gpus"][1]
    assert gpu["error"]["reason"] == "gpu_lost"
    assert gpu["health"]["status"] == "critical" and "gpu_lost" in gpu["health"]["reasons"]
    assert gpu["name"] == "NVIDIA L40S" and "power_usage_w" not in gpu  # read up to the failure
    assert [g["health"]["status"] for g in facts["gpus"]] == ["ok", "critical", "ok", "ok"]
