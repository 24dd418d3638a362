"""The audit and the validation HTML reports in a real browser: Debian's headless Chromium (`make chromium`) opens
each page, built from the unit fixtures (no test bed), with the network mapped away.

`--dump-dom` gives the DOM after the page's own script ran: the expected rows, the pictures, the sort the URL
fragment asks for, and (through a probe script added to a copy of the page) how the page lays out. At 1,400 px and
on a 390 px phone no page scrolls sideways (document width <= viewport + 1 px); at 1,400 px the validation check
table of a 10-node fleet fits without scrolling while the audit's 19-column fleet table scrolls inside its box; below
600 px each node is a card; every failing node's evidence is on the page as text (not only in a tooltip); a page of
more than 50 nodes sorts them naturally and has a filter that shows only the rows that are not ok. `--screenshot`
must give a real PNG; the screenshots are kept in build/screenshots/ (docs/screenshots/ holds copies: `cp
build/screenshots/*.png docs/screenshots/` after a change to the pages).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "unit" / "plugins" / "module_utils"))
sys.path.insert(0, str(REPO / "build" / "collections"))
import html_dom  # noqa: E402
from audit_fixtures import two_clusters  # noqa: E402
from fleet_fixtures import mixed_summary  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.html_page import (  # noqa: E402
    render_html as audit_html,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit.join import (  # noqa: E402
    build_snapshot,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.html_page import (  # noqa: E402
    render_html as validate_html,
)
from tests.integration.helpers import chromium  # noqa: E402

SHOTS = REPO / "build" / "screenshots"
NOW = "2026-12-03T15:00:00Z"
WIDTH = 1400

PHONE = 390
# Added to a copy of a page: records whether the page scrolls sideways and whether each .scroll box does.
PROBE = """<script>
var root=document.documentElement;root.setAttribute('data-page-overflows',String(root.scrollWidth>window.innerWidth));
document.querySelectorAll('.scroll').forEach(function(b){b.setAttribute('data-box-scrolls',
String(b.scrollWidth>b.clientWidth));});
</script></body>"""
# Added to a copy of a page: its layout as JSON in <html data-layout> (of the page that frames it, if any): the
# document's and the viewport's widths, how far the node table's box scrolls sideways, how its first node row is
# displayed, and how many of its rows show before and after a click on the row filter (when the page has one).
LAYOUT = """<script>(function(){
var d=document.documentElement,t=document.querySelector('#checks,#fleet'),box=t.closest('.scroll');
function shown(){return Array.prototype.filter.call(t.tBodies[0].rows,function(r){return r.getClientRects().length>0;})
.length;}
var out={page:Math.max(d.scrollWidth,document.body.scrollWidth),viewport:window.innerWidth,
box:box.scrollWidth-box.clientWidth,row:getComputedStyle(t.tBodies[0].rows[0]).display,rows:shown()};
var f=document.getElementById('only-failing');if(f){f.click();out.filtered=shown();}
(window.parent===window?d:parent.document.documentElement).setAttribute('data-layout',JSON.stringify(out));
})();</script></body>"""


def big_summary(nodes=60):
    """The mixed summary's rows repeated over ``nodes`` nodes named gpu-1 ... gpu-60, in shuffled order."""
    base = mixed_summary()
    rows = []
    for i in range(nodes):
        row = dict(base["rows"][i % len(base["rows"])], node="gpu-%d" % (i * 37 % nodes + 1))
        rows.append(dict(row, host=row["node"] + "-host"))
    failed = [r for r in rows if r["verdict"] == "fail"]
    return dict(
        base,
        rows=rows,
        passed=len(rows) - len(failed),
        failed=len(failed),
        failed_by_layer=dict(Counter(r["failing_layer"] for r in failed)),
        by_owner=[],
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    hosts, clusters = two_clusters()
    texts = {
        "audit": audit_html(build_snapshot(hosts, clusters, NOW)),
        "validate": validate_html(mixed_summary(), generated=NOW),
        "validate-60": validate_html(big_summary(), generated=NOW),
    }
    paths = {}
    for name, text in texts.items():
        for suffix, script in (("", None), ("-probe", PROBE), ("-layout", LAYOUT)):
            path = out / f"{name}{suffix}.html"
            path.write_text(text.replace("</body>", script, 1) if script else text)
            paths[name + suffix] = path
    return paths


def browser(*args, tmp, width=WIDTH):
    """Chromium at ``width`` x 1,400 px, without scroll bars, one CSS pixel per screen pixel."""
    return chromium("--hide-scrollbars", "--force-device-scale-factor=1", f"--window-size={width},1400", *args, tmp=tmp)


def dom(url, tmp, width=WIDTH):
    return html_dom.parse(browser("--dump-dom", url, tmp=tmp, width=width).stdout)


def framed(path, width):
    """A page showing ``path`` in a frame ``width`` px wide: Chromium's headless window is at least 500 px wide, so a
    phone's viewport is a frame (a screenshot of a window that narrow is cut to its width)."""
    wrapper = path.with_name(f"{path.stem}-{width}px.html")
    wrapper.write_text(
        f'<!DOCTYPE html><html><body style="margin:0"><iframe src="{path.name}" '
        f'style="width:{width}px;height:1400px;border:0;display:block"></iframe></body></html>'
    )
    return wrapper


def layout(pages, name, width, tmp):
    """The layout probe's findings for page ``name`` in a ``width`` px viewport (the frame may write to its parent)."""
    url = framed(pages[name + "-layout"], width).as_uri()
    root = html_dom.parse(browser("--allow-file-access-from-files", "--dump-dom", url, tmp=tmp).stdout)
    return json.loads(root.one("html").attrs["data-layout"])


def screenshot(path, name, tmp, width=WIDTH):
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (f"{name}-report.png" if width == WIDTH else f"{name}-report-{width}px.png")
    shot.unlink(missing_ok=True)
    browser(f"--screenshot={shot}", framed(path, width).as_uri(), tmp=tmp, width=width)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width_px, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width_px, height) == (width, 1400)


def test_the_audit_report_in_chromium(pages, tmp_path):
    root = dom(pages["audit"].as_uri(), tmp_path)
    _headers, rows = html_dom.table(root, "fleet")
    assert [(tr.attrs["data-id"], cells["severity"].text) for tr, cells in rows] == [
        ("east/h100-1", "critical"),
        ("east/h100-3", "critical"),
        ("west/a100-1", "critical"),
        ("east/h100-2", "warning"),
        ("east/h100-9", "unknown"),
        ("east/h100-0", "ok"),
        ("west/a100-0", "ok"),
    ]
    cells = {tr.attrs["data-id"]: c for tr, c in rows}
    assert "GPU 5: uncorrectable_ecc_volatile" in cells["east/h100-1"]["issues"].text
    assert cells["east/h100-3"]["status"].text == "unreachable"
    assert len(root.one("div", id="health-grid").all("g", class_="gpu")) == 26
    # east/NVIDIA-H100 (the node without a host): unknown twice; east/h100: three drivers, three CUDA versions;
    # west/a100: one driver, CUDA 12.8 and unknown
    assert len(root.one("svg", id="versions").all("rect")) == 2 + 6 + 3
    assert [dt.text for dt in root.one("dl", id="fixes").all("dt")][:2] == [
        "driver_vs_label",
        "gpu_count_vs_allocatable",
    ]

    by_node = [
        tr.attrs["data-id"]
        for tr, _c in html_dom.table(dom(pages["audit"].as_uri() + "#sort=node", tmp_path), "fleet")[1]
    ]
    assert [i.split("/")[1] for i in by_node] == sorted(i.split("/")[1] for i in by_node)

    probe = dom(pages["audit-probe"].as_uri(), tmp_path)
    assert probe.one("html").attrs["data-page-overflows"] == "false"  # at 1,400 px the page fits the window
    assert probe.one("div", class_="scroll").attrs["data-box-scrolls"] == "true"  # the 19 columns scroll in their box
    screenshot(pages["audit"], "audit", tmp_path)


def test_the_validation_report_in_chromium(pages, tmp_path):
    root = dom(pages["validate"].as_uri(), tmp_path)
    rows = [(tr, c) for tr, c in html_dom.table(root, "checks")[1] if "data-node" in tr.attrs]
    assert [(tr.attrs["data-node"], c["verdict"].text, c["layer"].text) for tr, c in rows[:4]] == [
        ("h100-3", "fail", "driver"),
        ("a100-1", "fail", "toolkit"),
        ("h100-4", "fail", "device-plugin"),
        ("l40s-2", "fail", "gpu-health"),
    ]
    assert len(rows) == 10 and {c["verdict"].text for _tr, c in rows[4:]} == {"pass"}
    ladder = root.one("svg", id="ladder")
    stops = {g.attrs["data-node"]: g.attrs["data-layer"] for g in ladder.all("g", class_="ladder-row")}
    assert stops == {"h100-3": "driver", "a100-1": "toolkit", "h100-4": "device-plugin", "l40s-2": "gpu-health"}
    assert [s.attrs["id"] for s in root.one("div", id="failures").all("section")] == [
        "node-h100-3",
        "node-a100-1",
        "node-h100-4",
        "node-l40s-2",
    ]

    by_node = [
        tr.attrs["data-node"]
        for tr, _c in html_dom.table(dom(pages["validate"].as_uri() + "#sort=node:desc", tmp_path), "checks")[1]
        if "data-node" in tr.attrs
    ]
    assert by_node == sorted(by_node, reverse=True)

    probe = dom(pages["validate-probe"].as_uri(), tmp_path)
    assert probe.one("html").attrs["data-page-overflows"] == "false"
    screenshot(pages["validate"], "validate", tmp_path)


@pytest.mark.parametrize("name", ["audit", "validate", "validate-60"])
@pytest.mark.parametrize("width", [PHONE, WIDTH])
def test_no_report_scrolls_sideways_on_a_phone_or_at_1400_px(pages, tmp_path, name, width):
    seen = layout(pages, name, width, tmp_path)
    assert seen["viewport"] == width and seen["page"] <= width + 1, seen
    if width == PHONE:
        assert seen["row"] == "block", seen  # a card per node
    elif name.startswith("validate"):
        assert seen["row"] == "table-row" and seen["box"] == 0, seen  # every check column in view
    else:
        assert seen["box"] > 0, seen  # the audit's 19 columns scroll in their box, not the page
    screenshot(pages[name], name, tmp_path, width)


def test_every_failing_nodes_evidence_is_text_on_the_page(pages, tmp_path):
    validate = dom(pages["validate"].as_uri(), tmp_path)
    _headers, rows = html_dom.table(validate, "checks")
    lines = {tr.attrs["data-detail-of"]: c["evidence"].text for tr, c in rows if "data-detail-of" in tr.attrs}
    for row in mixed_summary()["rows"]:
        for evidence in row["evidence"]:
            assert evidence in lines[row["node"]], (row["node"], lines)
    audit = dom(pages["audit"].as_uri(), tmp_path)
    shown = {c[4].text for _tr, c in html_dom.table(audit, "findings")[1]}
    snapshot = build_snapshot(*two_clusters(), NOW)
    expected = {f["evidence"] for r in snapshot["fleet"] for f in r["findings"]}
    assert expected and shown == expected, (shown, expected)


def test_a_page_of_more_than_50_nodes_sorts_them_naturally_and_filters_the_failing_ones(pages, tmp_path):
    root = dom(pages["validate-60"].as_uri(), tmp_path)
    _headers, rows = html_dom.table(root, "checks")
    passing = [tr.attrs["data-node"] for tr, _c in rows if tr.attrs.get("data-verdict") == "pass"]
    assert passing == sorted(passing, key=lambda n: int(n.split("-")[1])), passing  # gpu-2 before gpu-10
    by_node = html_dom.table(dom(pages["validate-60"].as_uri() + "#sort=node", tmp_path), "checks")[1]
    nodes = [tr.attrs["data-node"] for tr, _c in by_node if "data-node" in tr.attrs]
    assert nodes == ["gpu-%d" % i for i in range(1, 61)]
    details = [tr.attrs.get("data-node") or "line of " + tr.attrs["data-detail-of"] for tr, _c in by_node]
    for i, item in enumerate(details):
        if item.startswith("line of "):
            assert details[i - 1] == item[len("line of ") :], details[i - 1 : i + 1]  # each line under its node
    failing = sum(1 for tr, _c in rows if tr.attrs.get("data-verdict") == "fail")
    seen = layout(pages, "validate-60", WIDTH, tmp_path)
    assert seen["rows"] == 60 + failing and seen["filtered"] == 2 * failing, seen  # rows and their lines
    label = " ".join(root.one("label", class_="filter").text.split())
    assert label == "Show only the failing and quarantined nodes (%d of 60 rows)" % failing, label
    assert not dom(pages["validate"].as_uri(), tmp_path).all("input", id="only-failing")  # 10 rows: no filter
