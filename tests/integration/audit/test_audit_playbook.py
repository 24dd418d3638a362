"""playbooks/audit.yml across two real test beds, as the least-privilege identity, with fake GPU hosts.

Cluster `east` is the session test bed, cluster `west` a second `ci` bed this module starts and stops. Each cluster
is its own inventory file (passed with two -i options) holding one cluster group with its own kubeconfig. Hosts
run the real fact modules against fake host trees and the fake NVML library with fault profiles:

- east-h100-0: tests/sim/nvml/profiles/degraded (row remap pending, uncorrectable ECC, HW thermal slowdown, power cap)
- east-h100-1: h100-aged-8 (row remapping failed, lifetime uncorrectable ECC, 88 C) on the rke2 host tree:
               drift in driver, CUDA, VBIOS, toolkit and runtime
- east-t4-0:   t4-1, healthy
- west-h100-0: gpu-lost (Xid 79 on GPU 4); its node advertises 7 GPUs and labels driver 550.127.08 (mismatches)
- west-h100-1: an ssh host at a closed port: unreachable
- west t4-0:   a GPU node with no inventory host

The HTML report is opened in headless Chromium (Debian's /usr/bin/chromium); a screenshot is saved under build/audit/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
import yaml
from kubernetes import client

from tests.integration.conftest import _from_state, run_cli
from tests.integration.helpers import chromium

ROOT = Path(__file__).resolve().parents[3]

HOSTS = ROOT / "tests" / "sim" / "hosts"
PROFILES = ROOT / "tests" / "sim" / "nvml" / "profiles"
LIB = ROOT / "build" / "nvml" / "libnvidia-ml.so.1"
SCHEMA = json.loads((ROOT / "docs" / "audit-snapshot.schema.json").read_text())
SHOT_DIR = ROOT / "build" / "audit"


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_host(node, pool, tree, profile):
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "k8s_node_name": node,
        "gpu_pool": pool,
        "gpu_host_root": str(HOSTS / tree),
        "gpu_nvml_fixture": str(PROFILES / f"{profile}.yml"),
    }


def inventory(cluster, kubeconfig, hosts):
    """One inventory file = one cluster: group <cluster> (with its kubeconfig) under gpu_hosts."""
    return {
        "all": {
            "children": {
                "gpu_hosts": {"children": {cluster: {"hosts": hosts, "vars": {"gpu_audit_kubeconfig": kubeconfig}}}}
            }
        }
    }


@pytest.fixture(scope="module")
def west(tmp_path_factory):
    """A second ci test bed; west h100-0 gets the faults a lost GPU causes in the cluster."""
    state = tmp_path_factory.mktemp("west-bed")
    proc = run_cli("up", "--profile", "ci", "--state-dir", str(state), timeout=900)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        bed = _from_state(state, owned=True)
        core = client.CoreV1Api(bed.api_client())
        core.patch_node("h100-0", {"metadata": {"labels": {"nvidia.com/cuda.driver-version.full": "550.127.08"}}})
        core.patch_node_status("h100-0", {"status": {"allocatable": {"nvidia.com/gpu": "7"}}})
        yield bed, core
    finally:
        run_cli("down", "--state-dir", str(state))


@pytest.fixture(scope="module")
def work(tmp_path_factory, testbed, west):
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests" / "sim" / "nvml")], check=True)
    bed, _core = west
    d = tmp_path_factory.mktemp("audit")
    colls = d / "collections" / "ansible_collections" / "gpuops"
    colls.mkdir(parents=True)
    (colls / "gpu_operator").symlink_to(ROOT)
    east_hosts = {
        "east-h100-0": local_host("h100-0", "h100", "ubuntu2204-kubeadm-containerd", "degraded"),
        "east-h100-1": local_host("h100-1", "h100", "rke2", "h100-aged-8"),
        "east-t4-0": local_host("t4-0", "t4", "ubuntu2204-kubeadm-containerd", "t4-1"),
    }
    west_hosts = {
        "west-h100-0": local_host("h100-0", "h100", "ubuntu2204-kubeadm-containerd", "gpu-lost"),
        "west-h100-1": {
            "ansible_connection": "ssh",
            "ansible_host": "127.0.0.1",
            "ansible_port": closed_port(),
            "ansible_user": "nobody",
            "k8s_node_name": "h100-1",
            "gpu_pool": "h100",
        },
    }
    (d / "east.yml").write_text(yaml.safe_dump(inventory("east", testbed.sa_kubeconfig, east_hosts)))
    (d / "west.yml").write_text(yaml.safe_dump(inventory("west", bed.sa_kubeconfig, west_hosts)))
    return d


def audit(work, report_dir, *extra):
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="0",
        ANSIBLE_TIMEOUT="10",
        ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
        ANSIBLE_FORKS="8",
    )
    for key in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG", "LD_LIBRARY_PATH"):
        env.pop(key, None)
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        str(work / "east.yml"),
        "-i",
        str(work / "west.yml"),
        str(ROOT / "playbooks" / "audit.yml"),
        "-e",
        json.dumps({"gpu_audit_cluster_groups": ["east", "west"], "gpu_audit_report_dir": str(report_dir)}),
        "-e",
        f"gpu_nvml_library={LIB}",
        *extra,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return proc


def recap(proc, host):
    m = re.search(
        r"^%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % re.escape(host), proc.stdout, re.M
    )
    assert m, proc.stdout[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups())))


@pytest.fixture(scope="module")
def first(work, testbed):
    mark = testbed.audit_mark()
    proc = audit(work, work / "r1")
    return {
        "proc": proc,
        "dir": work / "r1",
        "snap": json.loads((work / "r1" / "gpu-audit.json").read_text()),
        "writes": testbed.audit_writes(mark),
        "reads": testbed.audit_events(mark, user=testbed.sa_username),
    }


def rows(snap):
    return {r["id"]: r for r in snap["fleet"]}


def test_the_three_reports_are_written_and_the_snapshot_matches_its_schema(first):
    assert sorted(p.name for p in first["dir"].iterdir()) == ["gpu-audit.html", "gpu-audit.json", "gpu-audit.md"]
    jsonschema.Draft202012Validator(SCHEMA).validate(first["snap"])
    assert first["snap"]["summary"]["clusters"] == 2 and first["snap"]["summary"]["clusters_failed"] == 0
    assert recap(first["proc"], "localhost")["changed"] == 1


def test_both_clusters_are_read_with_the_least_privilege_identity_and_nothing_is_written(first):
    assert first["writes"] == []
    listed = {(e["verb"], e["objectRef"]["resource"]) for e in first["reads"] if e.get("objectRef")}
    assert ("list", "nodes") in listed and ("list", "pods") in listed
    east, west = first["snap"]["clusters"]
    assert (east["name"], east["status"], east["gpu_nodes"]) == ("east", "ok", 3)
    assert (west["name"], west["status"], west["gpu_nodes"]) == ("west", "ok", 3)


def test_every_host_and_node_of_both_clusters_is_a_row(first):
    assert {rid: (r["host"], r["status"]) for rid, r in rows(first["snap"]).items()} == {
        "east/h100-0": ("east-h100-0", "ok"),
        "east/h100-1": ("east-h100-1", "ok"),
        "east/t4-0": ("east-t4-0", "ok"),
        "west/h100-0": ("west-h100-0", "ok"),
        "west/h100-1": ("west-h100-1", "unreachable"),
        "west/t4-0": (None, "not_in_inventory"),
    }


def test_the_unreachable_host_is_recorded_not_dropped(first):
    r = rows(first["snap"])["west/h100-1"]
    assert r["facts"] is None and "Failed to connect to the host via ssh" in r["message"]
    assert r["node"]["allocatable_gpus"] == 8  # the cluster's side is still reported
    assert first["snap"]["summary"]["statuses"]["unreachable"] == 1
    assert recap(first["proc"], "west-h100-1")["unreachable"] == 0  # ignored, so the play went on


def test_the_degraded_gpus_appear_with_their_categories(first):
    r = rows(first["snap"])
    east = {(f["gpu"], f["category"], f["severity"]) for f in r["east/h100-0"]["findings"]}
    assert {(2, "remapped_rows", "critical"), (5, "ecc", "critical"), (6, "thermal", "critical")} <= east
    assert [(f["gpu"], f["category"], f["reason"]) for f in r["west/h100-0"]["findings"]] == [(4, "xid", "gpu_lost")]
    assert {g["index"] for g in r["east/h100-0"]["gpus"] if g["health"] == "critical"} == {2, 5, 6}
    assert {(f["gpu"], f["category"], f["severity"], f["reason"]) for f in r["east/h100-1"]["findings"]} == {
        (1, "remapped_rows", "critical", "row_remap_failure"),
        (4, "ecc", "warning", "uncorrectable_ecc_aggregate"),
        (7, "thermal", "warning", "temperature_high"),
    }
    assert r["east/t4-0"]["facts"]["gpu_health"] == "ok" and r["east/t4-0"]["findings"] == []
    pools = {(p["cluster"], p["pool"]): p["health"] for p in first["snap"]["pools"]}
    assert pools[("west", "h100")]["xid"] == {"severity": "critical", "gpus_affected": 1, "findings": 1}
    assert pools[("east", "h100")]["ecc"]["severity"] == "critical"
    assert pools[("east", "t4")]["ecc"]["severity"] == "ok"


def test_mismatches_join_nvml_with_the_node(first):
    r = rows(first["snap"])
    assert [(m["kind"], m["host_value"], m["cluster_value"]) for m in r["west/h100-0"]["mismatches"]] == [
        ("gpu_count_vs_allocatable", 8, 7),
        ("driver_vs_label", "570.124.06", "550.127.08"),
    ]
    assert all(r[k]["mismatches"] == [] for k in ("east/h100-0", "east/h100-1", "east/t4-0"))


def test_drift_within_a_pool(first):
    (east_h100,) = [p for p in first["snap"]["pools"] if (p["cluster"], p["pool"]) == ("east", "h100")]
    drift = {d["field"]: sorted(v["value"] for v in d["values"]) for d in east_h100["drift"]}
    assert sorted(drift) == ["cuda", "driver", "runtime", "toolkit", "vbios"]
    assert drift["driver"] == ["550.127.08", "570.124.06"] and drift["vbios"] == ["96.00.74.00.11", "96.00.99.00.01"]
    (east_t4,) = [p for p in first["snap"]["pools"] if (p["cluster"], p["pool"]) == ("east", "t4")]
    assert east_t4["drift"] == []  # one host: nothing to differ from


def test_a_rerun_of_an_unchanged_fleet_changes_nothing(first, work):
    mtimes = {p.name: p.stat().st_mtime_ns for p in first["dir"].iterdir()}
    proc = audit(work, first["dir"])
    assert recap(proc, "localhost")["changed"] == 0
    assert {p.name: p.stat().st_mtime_ns for p in first["dir"].iterdir()} == mtimes


def test_check_mode_writes_no_report(first, work):
    proc = audit(work, work / "r-check", "--check")
    assert recap(proc, "localhost")["changed"] == 1
    assert not (work / "r-check").exists()


class Fleet(HTMLParser):
    """The fleet table of a DOM dump: rows of {column key: text}."""

    def __init__(self):
        super().__init__()
        self.rows, self._in, self._key, self._row = [], False, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._in = a.get("id") == "fleet"
        elif self._in and tag == "tr" and "data-id" in a:
            self._row = {"_id": a["data-id"], "_classes": {}}
            self.rows.append(self._row)
        elif self._in and tag == "td" and self._row is not None:
            self._key = a.get("data-key")
            self._row[self._key] = ""
            self._row["_classes"][self._key] = a.get("class") or ""

    def handle_data(self, data):
        if self._key:
            self._row[self._key] += data

    def handle_endtag(self, tag):
        if tag == "td":
            self._key = None
        elif tag == "table":
            self._in = False


def dom(url, tmp):
    parser = Fleet()
    parser.feed(chromium("--dump-dom", url, tmp=tmp).stdout)
    return parser.rows


def test_the_html_report_in_headless_chromium(first, tmp_path):
    url = (first["dir"] / "gpu-audit.html").as_uri()
    table = {r["_id"]: r for r in dom(url, tmp_path / "profile")}
    assert sorted(table) == sorted(rows(first["snap"]))
    assert (table["west/h100-1"]["status"], table["west/h100-1"]["host"]) == ("unreachable", "west-h100-1")
    assert "st-unreachable" in table["west/h100-1"]["_classes"]["status"]
    assert table["east/h100-0"]["health"] == "critical" and table["east/h100-0"]["degraded"] == "4"
    assert "GPU 5: uncorrectable_ecc_volatile" in table["east/h100-0"]["issues"]
    assert "GPU 4: gpu_lost" in table["west/h100-0"]["issues"]
    assert table["west/h100-0"]["allocatable"] == "7" and "driver_vs_label" in table["west/h100-0"]["issues"]
    assert table["west/t4-0"]["status"] == "not_in_inventory"
    (east_h100,) = [p for p in first["snap"]["pools"] if (p["cluster"], p["pool"]) == ("east", "h100")]
    (toolkit,) = [d for d in east_h100["drift"] if d["field"] == "toolkit"]
    for node in ("h100-0", "h100-1"):
        highlighted = "drift" in table["east/" + node]["_classes"]["toolkit"]
        assert highlighted == (node in toolkit["outliers"]), node
    assert "drift" not in table["east/t4-0"]["_classes"]["toolkit"]

    # the table's own script sorts it (the fragment asks for a sort on load)
    by_node_desc = [r["node"] for r in dom(url + "#sort=node:desc", tmp_path / "profile")]
    assert by_node_desc == sorted(by_node_desc, reverse=True)
    by_gpus = [r["gpus"] for r in dom(url + "#sort=gpus", tmp_path / "profile")]
    assert by_gpus == ["1", "8", "8", "8", "-", "-"]  # numbers ascending, unknown last

    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SHOT_DIR / "audit-report.png"
    if shot.exists():
        shot.unlink()
    chromium("--window-size=1600,1400", f"--screenshot={shot}", url, tmp=tmp_path / "profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_changes_against_the_baseline_snapshot(first, work, west):
    _bed, core = west
    core.patch_node("h100-0", {"metadata": {"labels": {"nvidia.com/cuda.driver-version.full": None}}})
    core.patch_node_status("h100-0", {"status": {"allocatable": {"nvidia.com/gpu": "8"}}})
    baseline = first["dir"] / "gpu-audit.json"
    audit(work, work / "r2", "-e", f"gpu_audit_baseline={baseline}")
    snap = json.loads((work / "r2" / "gpu-audit.json").read_text())
    jsonschema.validate(snap, SCHEMA)
    ch = snap["changes"]
    assert snap["baseline"]["generated_at"] == first["snap"]["generated_at"]
    assert (ch["added"], ch["removed"], ch["status"]) == ([], [], [])
    assert [(c["id"], c["field"], c["before"], c["after"]) for c in ch["fields"]] == [
        ("west/h100-0", "allocatable_gpus", 7, 8),
        ("west/h100-0", "label_driver_version", "550.127.08", None),
    ]
    assert [(m["id"], m["kind"]) for m in ch["mismatches_resolved"]] == [
        ("west/h100-0", "driver_vs_label"),
        ("west/h100-0", "gpu_count_vs_allocatable"),
    ]
    assert ch["findings_new"] == ch["findings_resolved"] == ch["mismatches_new"] == []
    md = (work / "r2" / "gpu-audit.md").read_text()
    assert "- west/h100-0: allocatable_gpus 7 -> 8" in md
    assert "- west/h100-0: resolved mismatch gpu_count_vs_allocatable" in md
    shutil.rmtree(work / "r2")
