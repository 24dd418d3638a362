"""Specification of module_utils/_workflows/audit/report.py and its renderers: rendering, atomic writes, one run."""

from __future__ import annotations

import json
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from audit_fixtures import two_clusters  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import cells as _cells  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import files as _files  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import html_page as _html_page  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import join as _audit  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import markdown as _markdown  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import report as _audit_report  # noqa: E402

NOW = "2026-12-03T15:00:00Z"
ALL = ["json", "markdown", "html"]


@pytest.fixture
def snap():
    hosts, clusters = two_clusters()
    return _audit.build_snapshot(hosts, clusters, NOW)


class Tables(HTMLParser):
    """Collects every table's rows as lists of (attrs, text) cells, and any external reference."""

    def __init__(self):
        super().__init__()
        self.tables, self.external, self._cell, self.scripts = {}, [], None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a:
                self.external.append(a[key])
        if tag == "link":
            self.external.append(a.get("href"))
        if tag == "script":
            self.scripts += 1
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr":
            self._table.append([])
        elif tag in ("td", "th"):
            self._cell = [a, ""]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._table[-1].append(tuple(self._cell))
            self._cell = None


def parse(html):
    p = Tables()
    p.feed(html)
    return p


def test_json_is_the_snapshot_with_sorted_keys(snap):
    text = _audit_report.render_json(snap)
    assert json.loads(text) == snap
    assert text == _audit_report.render_json(json.loads(text))  # stable bytes


def test_html_is_self_contained_and_holds_the_fleet_table(snap):
    html = _html_page.render_html(snap)
    page = parse(html)
    assert page.external == [] and page.scripts == 1
    assert not re.search(r"https?://", html)
    fleet = page.tables["fleet"]
    assert [c[1] for c in fleet[0]] == [t for _k, t in _cells.COLUMNS]
    body = {row[2][1]: {c[0]["data-key"]: c[1] for c in row} for row in fleet[1:]}
    assert sorted(body) == ["a100-0", "a100-1", "h100-0", "h100-1", "h100-2", "h100-3", "h100-9"]
    assert body["h100-3"]["status"] == "unreachable" and body["h100-3"]["host"] == "east-h100-3"
    assert body["h100-1"]["health"] == "critical" and body["h100-1"]["degraded"] == "4"
    assert "GPU 5: uncorrectable_ecc_volatile" in body["h100-1"]["issues"]
    assert body["h100-2"]["allocatable"] == "7" and "gpu_count_vs_allocatable" in body["h100-2"]["issues"]
    assert body["a100-0"]["allocatable"] == "nvidia.com/mig-3g.40gb=4"


def test_html_highlights_drifting_cells_and_colours_the_heat_map(snap):
    page = parse(_html_page.render_html(snap))
    h100_2 = [row for row in page.tables["fleet"][1:] if row[2][1] == "h100-2"][0]
    drifting = sorted(c[0]["data-key"] for c in h100_2 if "drift" in (c[0].get("class") or ""))
    assert drifting == ["cuda", "driver", "kernel", "runtime", "vbios"]
    h100_0 = [row for row in page.tables["fleet"][1:] if row[2][1] == "h100-0"][0]
    assert not [c for c in h100_0 if "drift" in (c[0].get("class") or "")]
    heat = {
        (row[0][1], row[1][1]): {c[0]["data-category"]: c[0]["class"] for c in row[5:]}
        for row in page.tables["heatmap"][1:]
    }
    assert heat[("east", "h100")] == {
        "ecc": "sev-critical",
        "remapped_rows": "sev-critical",
        "xid": "sev-ok",
        "thermal": "sev-critical",
        "other": "sev-warning",
    }


def test_html_escapes_every_value(snap):
    snap["fleet"][0]["message"] = "<script>alert(1)</script>"
    snap["fleet"][0]["status"] = "failed"
    snap["clusters"][0]["error"] = '"><img src=x>'
    html = _html_page.render_html(snap)
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


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


def test_write_atomic_replaces_targets_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    _files.write_atomic({str(target): "new", str(tmp_path / "r.md"): "md"})
    assert target.read_text() == "new" and (tmp_path / "r.md").read_text() == "md"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.md"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"


def test_write_atomic_touches_no_target_when_one_file_cannot_be_written(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_text("old a")
    (tmp_path / "b.md").write_text("old b")
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space left"):
        _files.write_atomic({str(tmp_path / "a.json"): "new a", str(tmp_path / "b.md"): "new b"})
    assert (tmp_path / "a.json").read_text() == "old a" and (tmp_path / "b.md").read_text() == "old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.md"]


def report(dest, **kw):
    hosts, clusters = two_clusters()
    return _audit_report.AuditReport(str(dest), hosts, clusters, kw.pop("formats", ALL), **kw)


def test_a_run_writes_the_three_files_and_a_rerun_changes_nothing(tmp_path):
    dest = tmp_path / "reports"
    first = report(dest).run(NOW)
    names = ["gpu-audit.html", "gpu-audit.json", "gpu-audit.md"]
    assert first["changed"] and sorted(os.path.basename(p) for p in first["written"]) == names
    assert sorted(p.name for p in dest.iterdir()) == names
    assert first["unreachable_hosts"] == ["east-h100-3"]
    assert "east/h100-1 GPU 5 (uncorrectable_ecc_volatile)" in first["degraded_gpus"]
    mtimes = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}
    second = report(dest).run("2026-12-04T00:00:00Z")
    assert (second["changed"], second["written"], second["generated_at"]) == (False, [], NOW)
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == mtimes


def test_a_changed_fleet_rewrites_with_a_new_timestamp(tmp_path):
    report(tmp_path).run(NOW)
    hosts, clusters = two_clusters()
    del hosts["west-a100-1"]
    result = _audit_report.AuditReport(str(tmp_path), hosts, clusters, ALL).run("2026-12-04T00:00:00Z")
    assert result["changed"] and result["generated_at"] == "2026-12-04T00:00:00Z"
    assert json.loads((tmp_path / "gpu-audit.json").read_text())["generated_at"] == "2026-12-04T00:00:00Z"


def test_check_mode_writes_nothing_and_reports_the_diff(tmp_path):
    result = report(tmp_path / "new").run(NOW, check_mode=True)
    assert result["changed"] and result["written"] == []
    assert not (tmp_path / "new").exists()
    assert result["diff"]["before"] == "" and result["diff"]["after"].startswith("# GPU fleet audit")


def test_formats_and_basename_choose_the_files(tmp_path):
    result = report(tmp_path, formats=["html"], basename="fleet").run(NOW)
    assert result["files"] == {"html": str(tmp_path / "fleet.html")}
    assert [p.name for p in tmp_path.iterdir()] == ["fleet.html"]


def test_a_baseline_file_gives_the_change_report(tmp_path):
    report(tmp_path / "old").run("2026-12-01T00:00:00Z")
    result = report(tmp_path / "new", baseline=str(tmp_path / "old" / "gpu-audit.json")).run(NOW)
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
def test_a_bad_baseline_is_an_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "base.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(_audit_report.ReportError, match=re.escape(str(path)) + ".*" + message):
        report(tmp_path / "out", baseline=str(path)).run(NOW)
    assert not (tmp_path / "out").exists()


def test_dest_that_is_a_file_is_an_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(_audit_report.ReportError, match="exists and is not a directory"):
        report(tmp_path / "f").run(NOW)
