"""nvidia_gpu_facts module contract: only ansible_facts, check mode, require_gpus, missing pynvml."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_host_facts, nvidia_gpu_facts

PROFILES = ROOT / "tests" / "sim" / "nvml" / "profiles"
LIB = ROOT / "build" / "nvml" / "libnvidia-ml.so.1"


@pytest.fixture(scope="module", autouse=True)
def fake_lib():
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)


def run(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_returns_only_ansible_facts_in_check_mode(capsys, monkeypatch):
    monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / "l40s-4.yml"))
    rc, out = run(nvidia_gpu_facts, {"library_path": str(LIB), "_ansible_check_mode": True}, capsys)
    assert rc == 0
    assert set(out) - {"invocation"} == {"ansible_facts"}
    facts = out["ansible_facts"]["nvidia_gpu"]
    assert (facts["gpu_count"], facts["driver_version"], facts["health"]) == (4, "550.127.05", "ok")


def test_nvml_errors_do_not_fail_the_task_by_default(capsys, monkeypatch):
    monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / "version-mismatch.yml"))
    rc, out = run(nvidia_gpu_facts, {"library_path": str(LIB)}, capsys)
    assert rc == 0 and out["ansible_facts"]["nvidia_gpu"]["reason"] == "driver_library_mismatch"


@pytest.mark.parametrize(
    "profile,msg",
    [
        ("driver-not-loaded", "NVML unavailable (driver_not_loaded)"),
        ("gpu-lost", "GPUs with errors: 4 (gpu_lost)"),
    ],
)
def test_require_gpus_fails_with_the_reason(capsys, monkeypatch, profile, msg):
    monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / f"{profile}.yml"))
    rc, out = run(nvidia_gpu_facts, {"library_path": str(LIB), "require_gpus": True}, capsys)
    assert rc == 1 and out["failed"] is True and out["msg"].startswith(msg)
    assert "nvidia_gpu" in out["ansible_facts"]


def test_require_gpus_passes_on_a_healthy_node(capsys, monkeypatch):
    monkeypatch.setenv("GPUOPS_FAKE_NVML_FIXTURE", str(PROFILES / "t4-1.yml"))
    rc, out = run(nvidia_gpu_facts, {"library_path": str(LIB), "require_gpus": True}, capsys)
    assert rc == 0


def test_missing_pynvml_uses_missing_required_lib(capsys, monkeypatch):
    monkeypatch.setattr(nvidia_gpu_facts, "HAS_PYNVML", False)
    monkeypatch.setattr(nvidia_gpu_facts, "PYNVML_IMP_ERR", "Traceback: ImportError")
    rc, out = run(nvidia_gpu_facts, {}, capsys)
    assert rc == 1 and "nvidia-ml-py" in out["msg"] and "ansible_facts" not in out


def test_gpu_host_facts_returns_only_ansible_facts(capsys):
    root = str(ROOT / "tests" / "sim" / "hosts" / "rhel9-secureboot")
    rc, out = run(gpu_host_facts, {"host_root": root, "_ansible_check_mode": True}, capsys)
    assert rc == 0 and set(out) - {"invocation"} == {"ansible_facts"}
    facts = out["ansible_facts"]["gpu_host"]
    assert facts["host_root"] == root and facts["secure_boot"]["enabled"] is True
    assert (facts["os"]["id"], facts["os"]["version_id"]) == ("rhel", "9.4")
