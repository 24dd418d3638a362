"""Specification of plugins/modules/gpu_audit_report.py: arguments, check and diff mode, idempotence, atomic moves,
its Jinja2 requirement, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ansible.module_utils import basic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import module_harness as harness  # noqa: E402
from audit_fixtures import two_clusters  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import html as _html  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_audit_report  # noqa: E402


def run_module(monkeypatch, **args):
    return harness.run_module(gpu_audit_report, monkeypatch, args)


@pytest.fixture
def inputs(tmp_path):
    hosts, clusters = two_clusters()
    return {"dest": str(tmp_path / "reports"), "hosts": hosts, "clusters": clusters}


def test_writes_the_reports_then_is_idempotent(monkeypatch, inputs):
    first = run_module(monkeypatch, **inputs)
    assert first["_kind"] == "exit" and first["changed"] is True
    assert sorted(first["files"]) == ["html", "json", "markdown"]
    snap = json.loads(Path(first["files"]["json"]).read_text())
    assert snap["summary"]["statuses"]["unreachable"] == 1 and first["unreachable_hosts"] == ["east-h100-3"]
    assert "diff" not in first
    second = run_module(monkeypatch, **inputs)
    assert (second["changed"], second["written"], second["generated_at"]) == (False, [], first["generated_at"])


def test_check_mode_with_diff_writes_nothing(monkeypatch, inputs):
    out = run_module(monkeypatch, _ansible_check_mode=True, _ansible_diff=True, **inputs)
    assert out["changed"] is True and out["written"] == []
    assert not Path(inputs["dest"]).exists()
    assert out["diff"]["before"] == "" and "## Drift" in out["diff"]["after"]
    assert out["diff"]["after_header"].endswith("gpu-audit.md")


def test_a_host_naming_an_unknown_cluster_fails_with_the_fix(monkeypatch, inputs):
    inputs["hosts"]["east-h100-0"]["cluster"] = "north"
    out = run_module(monkeypatch, **inputs)
    assert out["_kind"] == "fail"
    assert out["msg"] == "hosts east-h100-0: each needs a dict whose cluster is a key of clusters (east, west)"


def test_a_bad_baseline_fails_naming_it(monkeypatch, inputs, tmp_path):
    out = run_module(monkeypatch, baseline=str(tmp_path / "missing.json"), **inputs)
    assert out["_kind"] == "fail"
    assert out["msg"].startswith("audit report: baseline %s cannot be read" % (tmp_path / "missing.json"))


def test_empty_formats_fail(monkeypatch, inputs):
    out = run_module(monkeypatch, formats=[], **inputs)
    assert out["_kind"] == "fail" and "formats is empty" in out["msg"]


def test_an_unknown_format_is_refused_by_the_argument_spec(monkeypatch, inputs):
    out = run_module(monkeypatch, formats=["pdf"], **inputs)
    assert out["_kind"] == "fail" and "formats" in out["msg"] and "pdf" in out["msg"]


def test_each_report_is_moved_into_place_with_atomic_move(monkeypatch, inputs):
    moved = []
    real_move = basic.AnsibleModule.atomic_move
    monkeypatch.setattr(
        basic.AnsibleModule, "atomic_move", lambda self, src, dest: moved.append(dest) or real_move(self, src, dest)
    )
    out = run_module(monkeypatch, **inputs)
    assert out["_kind"] == "exit" and sorted(moved) == sorted(out["files"].values()) == out["written"]


def test_without_jinja2_the_module_fails_naming_the_library(monkeypatch, inputs):
    monkeypatch.setattr(_html.JINJA2, "present", False)
    out = run_module(monkeypatch, **inputs)
    assert out["_kind"] == "fail" and "Failed to import the required Python library (Jinja2)" in out["msg"]
    assert not Path(inputs["dest"]).exists()
