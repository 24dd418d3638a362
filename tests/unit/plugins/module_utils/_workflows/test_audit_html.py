"""Specification of the audit's HTML page (module_utils/_workflows/audit/html_page.py and html_template.py): one
self-contained, autoescaped page with a legend, pictures, the findings and mismatches linked to their fixes, and a
fleet table that scrolls under sticky headers, worst rows first."""

from __future__ import annotations

import re

import html_dom  # noqa: E402
import pytest
from audit_fixtures import two_clusters  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import html as _html  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import dra as _dra  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import fixes as _fixes  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import health as _health  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import html_page as _page  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import join as _audit  # noqa: E402

NOW = "2026-12-03T15:00:00Z"


@pytest.fixture
def snap():
    hosts, clusters = two_clusters()
    return _audit.build_snapshot(hosts, clusters, NOW)


@pytest.fixture
def page(snap):
    return html_dom.parse(_page.render_html(snap))


def fleet(page):
    """{node: {column key: cell}} and the row order, from the fleet table."""
    _headers, rows = html_dom.table(page, "fleet")
    return {cells["node"].text.strip(): cells for _tr, cells in rows}, [tr for tr, _c in rows]


def test_the_page_is_self_contained(snap):
    html = _page.render_html(snap)
    page = html_dom.parse(html)
    assert html_dom.references(page) == [] and page.all("link") == []
    assert not re.search(r"https?://", html)
    assert len(page.all("script")) == 1 and not page.one("script").attrs.get("src")
    assert html == _page.render_html(snap)  # the same snapshot gives the same bytes


def test_the_fleet_table_holds_every_row_with_its_cells(page):
    headers, _rows = html_dom.table(page, "fleet")
    assert headers == [title for _key, title in _page.HTML_COLUMNS]
    assert headers[:6] == ["Node", "Severity", "Cluster", "Pool", "Status", "Findings and mismatches"]
    body, _order = fleet(page)
    assert sorted(body) == ["a100-0", "a100-1", "h100-0", "h100-1", "h100-2", "h100-3", "h100-9"]
    assert body["h100-3"]["status"].text == "unreachable" and body["h100-3"]["host"].text == "east-h100-3"
    assert body["h100-1"]["health"].text == "critical" and body["h100-1"]["degraded"].text == "4"
    assert "GPU 5: uncorrectable_ecc_volatile" in body["h100-1"]["issues"].text
    assert body["h100-2"]["allocatable"].text == "7" and "gpu_count_vs_allocatable" in body["h100-2"]["issues"].text
    assert body["a100-0"]["allocatable"].text == "nvidia.com/mig-3g.40gb=4"


def test_the_fleet_table_lists_the_worst_rows_first_and_sorts_by_severity(page):
    _body, order = fleet(page)
    assert [(tr.attrs["data-id"], tr.attrs["data-severity"]) for tr in order] == [
        ("east/h100-1", "critical"),  # critical GPU findings
        ("east/h100-3", "critical"),  # unreachable
        ("west/a100-1", "critical"),  # NVML unavailable
        ("east/h100-2", "warning"),  # drift and mismatches
        ("east/h100-9", "unknown"),  # no inventory host
        ("east/h100-0", "ok"),
        ("west/a100-0", "ok"),
    ]
    ranks = [int(html_dom.table(page, "fleet")[1][i][1]["severity"].attrs["data-value"]) for i in range(len(order))]
    assert ranks == sorted(ranks)  # the column sorts worst first by its data-value
    assert "sortable" in page.one("table", id="fleet").attrs["class"]


def test_the_fleet_table_scrolls_under_sticky_headers(page):
    table = page.one("table", id="fleet")
    wrappers = [d for d in page.all("div", class_="scroll") if table in d.all("table")]
    assert len(wrappers) == 1
    style = "".join(page.styles)
    assert ".scroll{max-height:75vh;overflow:auto" in style
    assert ".scroll thead th{position:sticky;top:0" in style
    assert ".scroll tr>:first-child{position:sticky;left:0" in style  # the node column stays in view


def test_drifting_cells_are_highlighted_and_the_heat_map_coloured(page):
    body, _order = fleet(page)
    drifting = sorted(k for k, cell in body["h100-2"].items() if "drift" in cell.attrs["class"].split())
    assert drifting == ["cuda", "driver", "kernel", "runtime", "vbios"]
    assert not [k for k, cell in body["h100-0"].items() if "drift" in cell.attrs["class"].split()]
    _headers, rows = html_dom.table(page, "heatmap")
    heat = {
        (cells[0].text, cells[1].text): {c.attrs["data-category"]: c.attrs["class"] for c in list(cells.values())[5:]}
        for _tr, cells in rows
    }
    assert heat[("east", "h100")] == {
        "ecc": "sev-critical",
        "remapped_rows": "sev-critical",
        "xid": "sev-ok",
        "thermal": "sev-critical",
        "other": "sev-warning",
    }


def test_every_code_links_to_its_fix_text(page):
    links = [a.attrs["href"] for a in page.all("a") if a.attrs.get("href", "").startswith("#fix-")]
    targets = {dt.attrs["id"]: dt.text for dt in page.one("dl", id="fixes").all("dt")}
    assert links and {href[1:] for href in links} == set(targets)
    fixes = html_dom.definitions(page, "fixes")
    assert fixes["uncorrectable_ecc_volatile"].startswith("Drain the node (kubectl drain), then reset the GPU")
    assert fixes["unreachable"].startswith("Check SSH to the host")
    assert fixes["nvml_driver_not_loaded"].startswith("The NVIDIA kernel module is not loaded")
    body, _order = fleet(page)
    assert body["h100-3"]["status"].one("a").attrs["href"] == "#fix-unreachable"


def test_findings_and_mismatches_have_their_own_sections(page):
    _headers, rows = html_dom.table(page, "findings")
    found = [(c[0].text, c[1].text, c[2].text, c[3].text) for _tr, c in rows]
    assert found[:4] == [
        ("east/h100-1", "2", "critical", "row_remap_pending_reset_required"),
        ("east/h100-1", "5", "critical", "uncorrectable_ecc_volatile"),
        ("east/h100-1", "6", "critical", "hw_thermal_slowdown"),
        ("west/a100-1", "-", "critical", "nvml_driver_not_loaded"),
    ]
    assert {f[2] for f in found[4:]} == {"warning"}
    headers, rows = html_dom.table(page, "mismatches")
    assert headers == ["Node", "Kind", "Host", "Cluster", "Evidence"]
    assert [(c[0].text, c[1].text, c[2].text, c[3].text) for _tr, c in rows] == [
        ("east/h100-2", "gpu_count_vs_allocatable", "8", "7"),
        ("east/h100-2", "driver_vs_label", "550.127.08", "570.124.06"),
    ]


def test_the_legend_names_every_severity(page):
    legend = page.one("ul", id="legend")
    assert [li.attrs["data-severity"] for li in legend.all("li")] == ["critical", "warning", "unknown", "ok"]
    assert legend.all("li")[0].text.startswith("\u2715critical: act now")


def test_the_versions_picture_splits_each_pool_by_driver_and_cuda(page):
    svg = page.one("svg", id="versions")
    segments = [(r.attrs["data-field"], r.attrs["data-value"], r.attrs["fill"], r.text) for r in svg.all("rect")]
    east = [s for s in segments if "h100-2" in s[3] or "h100-0" in s[3] or "h100-3" in s[3]]
    assert east == [
        ("driver", "550.127.08", _html.OTHER_FILLS[0], "Driver 550.127.08: h100-2 (1)"),
        ("driver", "570.124.06", _html.MAJORITY_FILL, "Driver 570.124.06: h100-0, h100-1 (2)"),
        ("driver", "unknown", _html.UNKNOWN_FILL, "Driver unknown: h100-3 (1)"),
        ("cuda", "12.4", _html.OTHER_FILLS[0], "CUDA 12.4: h100-2 (1)"),
        ("cuda", "12.8", _html.MAJORITY_FILL, "CUDA 12.8: h100-0, h100-1 (2)"),
        ("cuda", "unknown", _html.UNKNOWN_FILL, "CUDA unknown: h100-3 (1)"),
    ]
    assert "550.127.08 \u00d71, 570.124.06 \u00d72, unknown \u00d71" in svg.text


def test_the_health_grid_has_one_square_per_gpu_with_a_tooltip(page):
    grid = page.one("div", id="health-grid")
    squares = {(g.attrs["data-id"], g.attrs["data-gpu"]): g for g in grid.all("g", class_="gpu")}
    assert len(squares) == 8 + 8 + 8 + 2  # h100-0, h100-1, h100-2, a100-0
    ecc = squares[("east/h100-1", "5")]
    assert ecc.attrs["data-severity"] == "critical"
    assert ecc.one("title").text == "east/h100-1 GPU 5 \u00b7 critical \u00b7 uncorrectable_ecc_volatile \u00b7 34 C"
    assert ecc.one("rect").attrs["fill"] == _html.SEVERITY_FILLS["critical"]
    assert squares[("east/h100-1", "3")].attrs["data-severity"] == "warning"
    assert squares[("east/h100-0", "0")].attrs["data-severity"] == "ok"
    missing = {g.attrs["data-id"]: g.one("text").text for g in grid.all("g", class_="gpu-missing")}
    assert missing == {
        "east/h100-3": "unreachable: no GPU data",
        "east/h100-9": "not_in_inventory: no GPU data",
        "west/a100-1": "no GPU data: NVML driver_not_loaded",
    }


def test_every_value_is_escaped_in_text_and_attributes(snap):
    snap["fleet"][0]["message"] = "<script>alert(1)</script>"
    snap["fleet"][0]["status"] = "failed"
    snap["fleet"][0]["id"] = 'x" onmouseover="alert(2)'
    snap["clusters"][0]["error"] = '"><img src=x>'
    html = _page.render_html(snap)
    assert "<script>alert" not in html and "<img" not in html and 'onmouseover="' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html_dom.parse(html).all("img") == []


def test_every_health_reason_and_mismatch_kind_has_a_fix_of_its_own():
    codes = set(_health.REASONS) | {"remapped_rows_uncorrected", "temperature_high"}
    codes |= {"gpu_count_vs_allocatable", "mig_vs_label", "driver_vs_label", "node_missing"}
    codes |= set(_dra.DRA_KINDS)
    codes |= {"unreachable", "failed", "not_audited", "not_in_inventory"}
    assert {c: _fixes.fix_for(c) != _fixes.GENERIC_FIX for c in codes} == dict.fromkeys(codes, True)
    assert _fixes.fix_for("nvml_no_permission").startswith("The caller cannot open /dev/nvidia*")
    assert _fixes.fix_for("some_new_xid_reason") == _fixes.GENERIC_FIX
