"""The fleet_report_html filter: a fleet validation summary as one self-contained, autoescaped HTML page."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import html_dom  # noqa: E402
from fleet_fixtures import mixed_summary  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_report_html import FilterModule  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule as Summary  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import html as _html  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import (  # noqa: E402
    CHECKS,
    LAYERS,
)

NOW = "2026-12-03T15:00:00Z"


def report(summary, **kw):
    return FilterModule().filters()["fleet_report_html"](summary, **kw)


def page(**kw):
    return html_dom.parse(report(mixed_summary(), **kw))


def checks_table(root):
    """The node rows of the check table (each failing node's details line left out)."""
    _headers, rows = html_dom.table(root, "checks")
    return [(tr, cells) for tr, cells in rows if "data-node" in tr.attrs]


def details_lines(root):
    """``{node: text}`` of the details lines under the failing nodes' rows."""
    _headers, rows = html_dom.table(root, "checks")
    return {tr.attrs["data-detail-of"]: cells["evidence"].text for tr, cells in rows if "data-detail-of" in tr.attrs}


def test_the_page_is_self_contained_and_the_same_summary_gives_the_same_bytes():
    html = report(mixed_summary(), generated=NOW)
    root = html_dom.parse(html)
    assert html_dom.references(root) == [] and not re.search(r"https?://", html)
    assert len(root.all("script")) == 1 and html == report(mixed_summary(), generated=NOW)
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</html>\n")


def test_the_title_and_timestamp_head_the_page_with_the_totals():
    root = page(title="Nightly", generated=NOW)
    assert root.one("head").one("title").text == "Nightly" and root.one("h1").text == "Nightly"
    assert "Generated 2026-12-03T15:00:00Z" in root.one("header").text
    cards = {b.attrs["data-k"]: b.text for b in root.one("section", id="summary").all("b")}
    assert cards == {
        "nodes": "10",
        "passed": "6",
        "failed": "4",
        "layer-driver": "1",
        "layer-toolkit": "1",
        "layer-device-plugin": "1",
        "layer-gpu-health": "1",
    }
    assert "Generated" not in page().one("header").text  # no timestamp unless given


def test_the_check_table_lists_failing_nodes_first_lowest_layer_first():
    rows = checks_table(page())
    assert [(tr.attrs["data-node"], c["layer"].text) for tr, c in rows] == [
        ("h100-3", "driver"),
        ("a100-1", "toolkit"),
        ("h100-4", "device-plugin"),
        ("l40s-2", "gpu-health"),
        ("a100-0", "-"),
        ("h100-0", "-"),
        ("h100-1", "-"),
        ("h100-2", "-"),
        ("l40s-0", "-"),
        ("l40s-1", "-"),
    ]
    ranks = [int(c["verdict"].attrs["data-value"]) for _tr, c in rows]
    assert ranks == sorted(ranks)  # sorting by the verdict column keeps this order
    assert "sortable" in page().one("table", id="checks").attrs["class"]


def test_each_check_is_a_narrow_column_with_its_outcome_as_a_sign_and_a_word():
    headers, _rows = html_dom.table(page(), "checks")
    assert headers[8:] == [name for name, _d in CHECKS]
    cells = {tr.attrs["data-node"]: c for tr, c in checks_table(page())}
    allocatable = cells["h100-4"]["check-allocatable"]
    assert (allocatable.text, allocatable.attrs["class"], allocatable.attrs["data-value"]) == (
        "\u2715",
        "check sev-critical",
        "fail",
    )
    assert allocatable.attrs["aria-label"] == "allocatable: fail" and allocatable.attrs["data-label"] == "allocatable"
    assert cells["h100-0"]["check-operands"].attrs["class"] == "check sev-ok"
    assert (cells["h100-0"]["check-smoke"].text, cells["h100-0"]["check-smoke"].attrs["data-value"]) == (
        "\u2013",
        "skipped",
    )
    assert cells["h100-4"]["allocatable"].text == "nvidia.com/gpu=7"


def test_each_failing_node_has_its_evidence_and_fix_on_a_line_below_its_row():
    lines = details_lines(page())
    assert list(lines) == ["h100-3", "a100-1", "h100-4", "l40s-2"]
    assert lines["h100-4"] == (
        "Evidence: the node advertises nvidia.com/gpu=7 but NVML counts 8 GPUs "
        "Fix: Check the device plugin pod on this node (its log names the GPUs it found) and its sharing config."
    )
    _headers, rows = html_dom.table(page(), "checks")
    order = [tr.attrs.get("data-node") or "detail:" + tr.attrs["data-detail-of"] for tr, _c in rows]
    assert order[:4] == ["h100-3", "detail:h100-3", "a100-1", "detail:a100-1"]  # each line under its node


def test_the_table_scrolls_under_sticky_headers():
    root = page()
    (wrapper,) = [d for d in root.all("div", class_="scroll") if d.all("table", id="checks")]
    assert wrapper.one("table").attrs["id"] == "checks"
    assert ".scroll thead th{position:sticky;top:0" in "".join(root.styles)


def test_the_ladder_shows_where_each_failing_node_stops():
    svg = page().one("svg", id="ladder")
    rows = {g.attrs["data-node"]: g for g in svg.all("g", class_="ladder-row")}
    assert list(rows) == ["h100-3", "a100-1", "h100-4", "l40s-2"]
    states = {
        node: {c.attrs["data-layer"]: c.attrs["data-state"] for c in g.all("g", class_="layer-cell")}
        for node, g in rows.items()
    }
    assert list(states["h100-4"]) == list(LAYERS)
    assert [states["h100-4"][layer] for layer in LAYERS] == ["ok"] * 3 + ["critical"] + ["unknown"] * (len(LAYERS) - 4)
    assert states["h100-3"]["driver"] == "critical" and states["h100-3"]["node"] == "unknown"
    stop = [c for c in rows["a100-1"].all("g", class_="layer-cell") if c.attrs["data-state"] == "critical"][0]
    assert stop.one("title").text.startswith("a100-1, toolkit: operand pods on the node wait in ContainerCreating")
    assert stop.one("rect").attrs["fill"] == _html.SEVERITY_FILLS["critical"]
    counts = [t.text for t in svg.all("text") if t.text.endswith(("stop", "stops"))]
    assert counts == ["1 stop", "0 stops", "1 stop", "1 stop", "0 stops", "1 stop"] + ["0 stops"] * 4


def test_a_node_failing_at_a_higher_layer_too_shows_it_as_a_consequence():
    hosts = {"a": {"node_name": "gpu-0", "pool": "p", "nvidia_gpu": {"available": True, "gpu_count": 1}}}
    node = {
        "allocatable": {"nvidia.com/gpu": 0},
        "capacity": {"nvidia.com/gpu": 0},
        "operands": {"dcgm-exporter": {"name": "dcgm-x", "ready": False, "waiting_reason": "CrashLoopBackOff"}},
        "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "T4", "nvidia.com/gpu.count": "1"},
        "ready": True,
        "gpu": {"product": "T4"},
    }
    summary = Summary().filters()["fleet_summary"](hosts, {"gpu-0": node})
    svg = html_dom.parse(report(summary)).one("svg", id="ladder")
    states = {c.attrs["data-layer"]: c.attrs["data-state"] for c in svg.all("g", class_="layer-cell")}
    assert (states["device-plugin"], states["monitoring"], states["mig"]) == ("critical", "warning", "unknown")


def test_the_legend_explains_the_ladder():
    legend = page().one("ul", id="legend")
    assert [li.attrs["data-severity"] for li in legend.all("li")] == ["critical", "warning", "unknown", "ok"]
    assert "the layer where the node stops" in legend.all("li")[0].text


def test_the_driver_picture_splits_each_pool_by_version():
    svg = page().one("svg", id="drivers")
    h100 = [(r.attrs["data-value"], r.attrs["fill"], r.text) for r in svg.all("rect") if "h100-" in r.text]
    assert h100 == [
        ("550.127.08", _html.OTHER_FILLS[0], "Driver 550.127.08: h100-4 (1)"),
        ("570.124.06", _html.MAJORITY_FILL, "Driver 570.124.06: h100-0, h100-1, h100-2 (3)"),
        ("unknown", _html.UNKNOWN_FILL, "Driver unknown: h100-3 (1)"),
    ]


def test_failures_list_each_finding_with_its_fix_and_layer_and_check_names_link_to_what_they_mean():
    root = page()
    section = root.one("section", id="node-a100-1")
    (item,) = section.all("li")
    assert item.attrs["data-layer"] == "toolkit"
    assert 'no runtime for "nvidia" is configured' in item.text
    assert "Fix: The container runtime has no nvidia runtime handler" in " ".join(item.text.split())
    targets = {e.attrs["id"] for e in root.all() if "id" in e.attrs}
    links = {a.attrs["href"][1:] for a in root.all("a")}
    assert links <= targets
    assert {"layer-toolkit", "check-operands", "node-a100-1"} <= links
    layers = html_dom.definitions(root, "layers")
    assert list(layers) == list(LAYERS) and layers["toolkit"].startswith("the NVIDIA container toolkit")


def test_a_passing_fleet_has_no_ladder_and_no_failures():
    passing = mixed_summary()
    passing["rows"] = [r for r in passing["rows"] if r["verdict"] == "pass"]
    passing.update(failed=0, failed_by_layer={})
    root = html_dom.parse(report(passing))
    assert root.all("svg", id="ladder") == [] and "passes every layer" in root.one("p", id="ladder").text
    assert root.one("p", id="failures").text == "None."


def test_every_value_is_escaped():
    summary = mixed_summary()
    summary["rows"][0]["node"] = '<img src=x onerror="alert(1)">'
    summary["rows"][1]["findings"][0]["evidence"] = "</script><script>alert(2)</script>"
    html = report(summary, title="<b>t</b>")
    root = html_dom.parse(html)
    assert root.all("img") == [] and len(root.all("script")) == 1 and root.one("h1").text == "<b>t</b>"
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html and "&lt;b&gt;t&lt;/b&gt;" in html


def test_the_failures_are_grouped_by_owner_each_with_its_fix_command():
    owners = page().one("div", id="owners")
    sections = owners.all("section")
    assert [s.attrs["data-owner"] for s in sections] == ["node-os-team", "platform-team"]
    first = sections[0].all("li")[0]
    assert first.attrs["data-layer"] == "driver" and first.one("code").text


def test_a_passing_fleet_has_no_owners_section():
    hosts = {"a": {"node_name": "gpu-0", "nvidia_gpu": {"available": True, "gpu_count": 1}}}
    nodes = {"gpu-0": {"allocatable": {"nvidia.com/gpu": 1}, "operands": {}, "ready": True, "gpu": {}}}
    nodes["gpu-0"]["labels"] = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "T4",
        "nvidia.com/gpu.count": "1",
    }
    root = html_dom.parse(report(Summary().filters()["fleet_summary"](hosts, nodes)))
    assert root.all("div", id="owners") == []
