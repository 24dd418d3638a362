"""Specification of module_utils/_workflows/audit/report.py, its JSON and Markdown renderers and its file writes
(through AnsibleModule.atomic_move): one audit run. The HTML page has its own spec, test_audit_html.py."""

from __future__ import annotations

import json
import os
import re

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from audit_fixtures import two_clusters  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import files as _files  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import join as _audit  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import markdown as _markdown  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import report as _audit_report  # noqa: E402

NOW = "2026-12-03T15:00:00Z"
ALL = ["json", "markdown", "html"]


@pytest.fixture
def snap():
    hosts, clusters = two_clusters()
    return _audit.build_snapshot(hosts, clusters, NOW)


def test_json_is_the_snapshot_with_sorted_keys(snap):
    text = _audit_report.render_json(snap)
    assert json.loads(text) == snap
    assert text == _audit_report.render_json(json.loads(text))  # stable bytes


def test_markdown_summarises_clusters_health_drift_issues_and_the_fleet(snap):
    md = _markdown.render_markdown(snap, title="Audit")
    assert md.startswith("# Audit\n")
    assert "- Hosts: 6 (ok 5, unreachable 1, failed 0, not audited 0); GPU nodes without a host: 1" in md
    assert "- GPUs (NVML): 26; degraded: 3 critical, 1 warning" in md
    assert (
        "| east | h100 | 4 | 24 | 4 | critical (1 GPU) | critical (1 GPU) | ok | critical (1 GPU) | warning (1 GPU) |"
        in md
    )
    assert "| east | h100 | driver | 570.124.06 | h100-2 | 550.127.08: h100-2; 570.124.06: h100-0, h100-1 |" in md
    assert (
        "| east/h100-3 | east-h100-3 | unreachable | Failed to connect to the host via ssh: Connection refused |" in md
    )
    assert "No baseline snapshot given." in md


def test_markdown_escapes_pipes(snap):
    snap["fleet"][0]["message"] = "a|b"
    snap["fleet"][0]["status"] = "failed"
    assert "a\\|b" in _markdown.render_markdown(snap)


def test_markdown_lists_changes_against_the_baseline():
    hosts, clusters = two_clusters()
    before = _audit.build_snapshot(hosts, clusters, "2026-12-01T00:00:00Z")
    hosts["east-h100-2"]["nvml_result"]["ansible_facts"]["nvidia_gpu"]["driver_version"] = "570.124.06"
    after = _audit.build_snapshot(hosts, clusters, NOW, baseline=before)
    md = _markdown.render_markdown(after)
    assert "Against the baseline of 2026-12-01T00:00:00Z: 2 change(s)." in md
    assert "- east/h100-2: driver 550.127.08 -> 570.124.06" in md
    assert "- east/h100-2: resolved mismatch driver_vs_label" in md
    same = _audit.build_snapshot(hosts, clusters, NOW, baseline=after)
    assert "No change since the baseline of 2026-12-03T15:00:00Z." in _markdown.render_markdown(same)


@pytest.fixture
def module(tmp_path):
    """A real AnsibleModule (its tmpdir under tmp_path); ``module(check=True)`` for one in check mode."""

    def make(check=False):
        tmpdir = tmp_path / "ansible-tmp"
        tmpdir.mkdir(exist_ok=True)
        args = {"_ansible_tmpdir": str(tmpdir), "_ansible_check_mode": check, "_ansible_remote_tmp": str(tmpdir)}
        with patch_module_args(args):
            return AnsibleModule(argument_spec={}, supports_check_mode=True)

    return make


def test_write_files_moves_each_staged_file_over_its_target_with_atomic_move(tmp_path, module, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o600)
    m = module()
    moves = []
    real_move = AnsibleModule.atomic_move
    monkeypatch.setattr(
        AnsibleModule, "atomic_move", lambda self, src, dest: moves.append((src, dest)) or real_move(self, src, dest)
    )
    _files.write_files(m, {str(target): "new", str(tmp_path / "r.md"): "md"})
    assert target.read_text() == "new" and (tmp_path / "r.md").read_text() == "md"
    assert [d for _s, d in moves] == [str(target), str(tmp_path / "r.md")]
    assert all(os.path.dirname(src) == m.tmpdir for src, _d in moves)  # staged in the module's tmpdir
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ansible-tmp", "r.json", "r.md"]
    assert oct(target.stat().st_mode & 0o777) == "0o600"  # a replaced file keeps its own mode


@pytest.mark.parametrize(("umask", "mode"), [(0o022, "0o644"), (0o077, "0o600")])
def test_a_new_report_file_honours_the_umask(tmp_path, module, umask, mode):
    m = module()
    previous = os.umask(umask)
    try:
        _files.write_stale(m, str(tmp_path / "reports"), {str(tmp_path / "reports" / "r.md"): "md"})
    finally:
        os.umask(previous)
    assert oct((tmp_path / "reports" / "r.md").stat().st_mode & 0o777) == mode


def test_write_files_touches_no_target_when_one_file_cannot_be_staged(tmp_path, module, monkeypatch):
    (tmp_path / "a.json").write_text("old a")
    (tmp_path / "b.md").write_text("old b")
    real_fdopen = os.fdopen
    calls = []

    def failing_fdopen(fd, mode):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, mode)

    monkeypatch.setattr(_files.os, "fdopen", failing_fdopen)
    with pytest.raises(OSError, match="No space left"):
        _files.write_files(module(), {str(tmp_path / "a.json"): "new a", str(tmp_path / "b.md"): "new b"})
    assert (tmp_path / "a.json").read_text() == "old a" and (tmp_path / "b.md").read_text() == "old b"


def report(dest, **kw):
    hosts, clusters = two_clusters()
    return _audit_report.AuditReport(
        hosts, clusters, _audit_report.ReportOptions(str(dest), kw.pop("formats", ALL), **kw)
    )


@pytest.fixture
def run(module):
    """Run an audit report at a time (a fresh module each run, in check mode when asked)."""
    return lambda rep, now=NOW, check=False: rep.run(now, module(check))


def test_a_run_writes_the_three_files_and_a_rerun_changes_nothing(tmp_path, run):
    dest = tmp_path / "reports"
    first = run(report(dest))
    names = ["gpu-audit.html", "gpu-audit.json", "gpu-audit.md"]
    assert first["changed"] and sorted(os.path.basename(p) for p in first["written"]) == names
    assert sorted(p.name for p in dest.iterdir()) == names
    assert first["unreachable_hosts"] == ["east-h100-3"]
    assert "east/h100-1 GPU 5 (uncorrectable_ecc_volatile)" in first["degraded_gpus"]
    mtimes = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}
    second = run(report(dest), "2026-12-04T00:00:00Z")
    assert (second["changed"], second["written"], second["generated_at"]) == (False, [], NOW)
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == mtimes


def test_a_changed_fleet_rewrites_with_a_new_timestamp(tmp_path, run):
    run(report(tmp_path / "out"))
    hosts, clusters = two_clusters()
    del hosts["west-a100-1"]
    result = run(
        _audit_report.AuditReport(hosts, clusters, _audit_report.ReportOptions(str(tmp_path / "out"), ALL)),
        "2026-12-04T00:00:00Z",
    )
    assert result["changed"] and result["generated_at"] == "2026-12-04T00:00:00Z"
    assert json.loads((tmp_path / "out" / "gpu-audit.json").read_text())["generated_at"] == "2026-12-04T00:00:00Z"


def test_check_mode_writes_nothing_and_reports_the_diff(tmp_path, run):
    result = run(report(tmp_path / "new"), check=True)
    assert result["changed"] and result["written"] == []
    assert not (tmp_path / "new").exists()
    assert result["diff"]["before"] == "" and result["diff"]["after"].startswith("# GPU fleet audit")


def test_formats_and_basename_choose_the_files(tmp_path, run):
    result = run(report(tmp_path / "out", formats=["html"], basename="fleet"))
    assert result["files"] == {"html": str(tmp_path / "out" / "fleet.html")}
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["fleet.html"]


def test_a_baseline_file_gives_the_change_report(tmp_path, run):
    run(report(tmp_path / "old"), "2026-12-01T00:00:00Z")
    result = run(report(tmp_path / "new", baseline=str(tmp_path / "old" / "gpu-audit.json")))
    assert result["changes"]["total"] == 0
    snap = json.loads((tmp_path / "new" / "gpu-audit.json").read_text())
    assert snap["baseline"]["generated_at"] == "2026-12-01T00:00:00Z"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot be read"),
        ("{not json", "is not JSON"),
        ('{"kind": "x"}', "is not a gpu_audit snapshot"),
    ],
)
def test_a_bad_baseline_is_an_error_naming_the_file(tmp_path, run, content, message):
    path = tmp_path / "base.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(_audit_report.ReportError, match=re.escape(str(path)) + ".*" + message):
        run(report(tmp_path / "out", baseline=str(path)))
    assert not (tmp_path / "out").exists()


def test_dest_that_is_a_file_is_an_error(tmp_path, run):
    (tmp_path / "f").write_text("")
    with pytest.raises(_audit_report.ReportError, match="exists and is not a directory"):
        run(report(tmp_path / "f"))
