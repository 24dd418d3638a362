"""The audit and the validation HTML reports in a real browser: Debian's headless Chromium (`make chromium`) opens
each page, built from the unit fixtures (no test bed), with the network mapped away.

`--dump-dom` gives the DOM after the page's own script ran: the expected rows, the pictures, the sort the URL
fragment asks for, and (through a probe script added to a copy of the page) that at 1,400 px the page does not
scroll sideways while the wide fleet table scrolls inside its box. `--screenshot` must give a real PNG; the
screenshots are kept in build/screenshots/ (docs/screenshots/ holds copies: `cp build/screenshots/*.png
docs/screenshots/` after a change to the pages).
"""

from __future__ import annotations

import sys
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

# Added to a copy of a page: records whether the page scrolls sideways and whether each .scroll box does.
PROBE = """<script>
var root=document.documentElement;root.setAttribute('data-page-overflows',String(root.scrollWidth>window.innerWidth));
document.querySelectorAll('.scroll').forEach(function(b){b.setAttribute('data-box-scrolls',
String(b.scrollWidth>b.clientWidth));});
</script></body>"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    hosts, clusters = two_clusters()
    texts = {
        "audit": audit_html(build_snapshot(hosts, clusters, NOW)),
        "validate": validate_html(mixed_summary(), generated=NOW),
    }
    paths = {}
    for name, text in texts.items():
        (out / f"{name}.html").write_text(text)
        (out / f"{name}-probe.html").write_text(text.replace("</body>", PROBE, 1))
        paths[name] = out / f"{name}.html"
        paths[name + "-probe"] = out / f"{name}-probe.html"
    return paths


def browser(*args, tmp):
    """Chromium at 1,400 x 1,400 px, without scroll bars, one CSS pixel per screen pixel."""
    return chromium("--hide-scrollbars", "--force-device-scale-factor=1", f"--window-size={WIDTH},1400", *args, tmp=tmp)


def dom(url, tmp):
    return html_dom.parse(browser("--dump-dom", url, tmp=tmp).stdout)


def screenshot(path, name, tmp):
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name}-report.png"
    shot.unlink(missing_ok=True)
    browser(f"--screenshot={shot}", path.as_uri(), tmp=tmp)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (WIDTH, 1400)


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
    _headers, rows = html_dom.table(root, "checks")
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
    ]
    assert by_node == sorted(by_node, reverse=True)

    probe = dom(pages["validate-probe"].as_uri(), tmp_path)
    assert probe.one("html").attrs["data-page-overflows"] == "false"
    screenshot(pages["validate"], "validate", tmp_path)
