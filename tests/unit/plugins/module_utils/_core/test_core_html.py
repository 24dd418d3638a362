"""Specification of module_utils/_core/html.py: the HTML reports' Jinja2 rendering, legend and versions picture."""

from __future__ import annotations

import jinja2
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core import html as _html
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import GpuOpsError

PAGE = '{% extends "page.html" %}{% block body %}<p>{{ value }}</p>{% endblock %}'


def test_a_page_is_the_frame_with_inline_style_and_script_and_escaped_values():
    html = _html.render({"t.html": PAGE}, "t.html", title="A & B", value="<i>x</i>")
    assert html.startswith("<!DOCTYPE html>\n<html lang=\"en\">") and html.endswith("</html>\n")
    assert "<title>A &amp; B</title>" in html and "<p>&lt;i&gt;x&lt;/i&gt;</p>" in html
    assert "<style>\n:root{color-scheme:light}" in html and "table.sortable" in html


def test_a_missing_value_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError, match="value"):
        _html.render({"t.html": PAGE}, "t.html", title="t")


def test_without_jinja2_rendering_fails_naming_the_library(monkeypatch):
    monkeypatch.setattr(_html, "HAS_JINJA2", False)
    with pytest.raises(GpuOpsError, match="needs the Python library Jinja2"):
        _html.render({"t.html": PAGE}, "t.html", title="t", value=1)


def test_versions_sort_numerically_part_by_part():
    versions = ["570.124.06", "570.86.10", "550.127.08", "575.51.03"]
    assert sorted(versions, key=_html.version_key) == ["550.127.08", "570.86.10", "570.124.06", "575.51.03"]


def test_the_versions_picture_gives_each_value_a_share_of_the_bar():
    chart = _html.version_chart(
        [("p", [("driver", "Driver", {"570.86.10": ["a", "b", "c"], "570.124.06": ["d"], None: ["e", "f"]})])],
        "Driver",
        bar_width=300,
    )
    (pool_bar,) = chart["groups"][0]["bars"]
    assert [(s["value"], s["width"], s["fill"]) for s in pool_bar["segments"]] == [
        ("570.86.10", 150.0, _html.MAJORITY_FILL),
        ("570.124.06", 50.0, _html.OTHER_FILLS[0]),
        ("unknown", 100.0, _html.UNKNOWN_FILL),
    ]
    assert [s["x"] for s in pool_bar["segments"]] == [70, 220.0, 270.0]
    assert pool_bar["text"] == "570.86.10 \u00d73, 570.124.06 \u00d71, unknown \u00d72"
    assert chart["groups"][0]["nodes"] == 6


def test_values_that_are_not_versions_still_sort():
    chart = _html.version_chart([("p", [("x", "X", {"12.beta": ["a"], "12.8": ["b", "c"]})])], "X")
    assert [s["value"] for s in chart["groups"][0]["bars"][0]["segments"]] == ["12.8", "12.beta"]


def test_the_legend_is_every_severity_worst_first_unless_texts_choose():
    assert [e["name"] for e in _html.severity_legend()] == ["critical", "warning", "unknown", "ok"]
    legend = _html.severity_legend({"ok": "passed", "critical": "stops"})
    assert [(e["name"], e["text"], e["glyph"]) for e in legend] == [
        ("critical", "stops", "\u2715"),
        ("ok", "passed", "\u2713"),
    ]
    assert _html.severity_rank("critical") < _html.severity_rank("ok") < _html.severity_rank("bogus")
