"""Specification of the audit's DRA view (module_utils/_workflows/audit/dra.py and its place in the join, the
changes and the reports): per node the mode and what its DRA driver publishes, each NVML GPU marked published or
not by UUID, the drift between NVML and the published devices as mismatches, and a DRA section in Markdown and
HTML only when some node uses DRA. Inputs are gpu_cluster_info-shaped: the real cluster_view over raw Nodes,
ResourceSlices and ResourceClaims."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import html_dom  # noqa: E402
import jsonschema
import pytest
from audit_fixtures import (  # noqa: E402
    UNREACHABLE,
    dra_claim,
    dra_cluster_result,
    dra_device,
    dra_mig_device,
    dra_node,
    dra_slice,
    gpu,
    host,
    nvml_result,
    two_clusters,
)

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import changes as _changes  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import html_page as _page  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import join as _audit  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import markdown as _md  # noqa: E402

SCHEMA = json.loads((Path(__file__).resolve().parents[5] / "docs" / "audit-snapshot.schema.json").read_text())
NOW = "2026-12-05T08:00:00Z"
TAINT = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule", "timeAdded": "2026-12-05T07:00:00Z"}


def mig_gpu(i):
    return gpu(i, name="NVIDIA A100-SXM4-80GB", mig={"current": True, "devices": [{"index": 0}, {"index": 1}]})


def dra_fleet():
    """Cluster lab, GPUCluster mode plus one node of each other mode:

    - dra-ok: 8 GPUs, all published, driver 570.124.6 (NVML 570.124.06); one device allocated to a claim
    - dra-lost: GPU 7 not published (8 by NVML, 7 published)
    - dra-swapped: GPU 7 not published, a GPU-0099 NVML does not know published instead (counts agree)
    - dra-old-driver: publishes driverVersion 550.127.8 while NVML runs 570.124.06; device gpu-0 tainted (Xid 79)
    - dra-noslice: meant to run the DRA driver, no ResourceSlice (mode none)
    - dra-mig: 2 A100 in MIG mode, published as 2 MIG devices each
    - dra-down: unreachable host on a healthy DRA node
    - dra-nonvml: NVML unavailable on the host
    - both-0: nvidia.com/gpu 8 advertised and the 8 GPUs published
    - er-0: extended resource only
    """
    eight = [dra_device(i) for i in range(8)]
    slices = [
        dra_slice("dra-ok", eight),
        dra_slice("dra-lost", eight[:7]),
        dra_slice("dra-swapped", eight[:7] + [dra_device(7, uuid="GPU-0099")]),
        dra_slice("dra-old-driver", [dra_device(0, version="550.127.8", taints=[TAINT])]),
        dra_slice("dra-mig", [dra_mig_device(p, j) for p in range(2) for j in range(2)]),
        dra_slice("dra-down", eight),
        dra_slice("dra-nonvml", eight),
        dra_slice("both-0", eight),
    ]
    nodes = [dra_node(n) for n in ("dra-ok", "dra-lost", "dra-swapped", "dra-old-driver", "dra-noslice")]
    nodes += [dra_node(n) for n in ("dra-mig", "dra-down", "dra-nonvml")]
    nodes += [dra_node("both-0", extended=8), dra_node("er-0", extended=8)]
    nodes[-1]["metadata"]["labels"].pop("nvidia.com/gpu.deploy.dra-driver")
    clusters = {"lab": dra_cluster_result(nodes, slices, [dra_claim("ml", "train", "dra-ok", "gpu-3")])}
    hosts = {n: host("lab", n, None) for n in ("dra-ok", "dra-lost", "dra-swapped", "dra-noslice", "both-0", "er-0")}
    hosts["dra-old-driver"] = host("lab", "dra-old-driver", None, gpus=[gpu(0)])
    hosts["dra-mig"] = host("lab", "dra-mig", None, gpus=[mig_gpu(0), mig_gpu(1)])
    hosts["dra-down"] = dict(host("lab", "dra-down", None), host_facts_result=dict(UNREACHABLE), nvml_result=None)
    hosts["dra-nonvml"] = host("lab", "dra-nonvml", None, nvml=nvml_result([], available=False, reason="no_gpu"))
    return hosts, clusters


@pytest.fixture
def snap():
    hosts, clusters = dra_fleet()
    return _audit.build_snapshot(hosts, clusters, NOW)


def rows(snap):
    return {r["node_name"]: r for r in snap["fleet"]}


def kinds(row):
    return [m["kind"] for m in row["mismatches"]]


def test_the_dra_snapshot_validates_against_the_published_schema(snap):
    jsonschema.Draft202012Validator(SCHEMA).validate(snap)
    assert snap["schema_version"] == "1.2"
    assert snap["summary"]["dra_nodes"] == 9  # every node but er-0


def test_each_row_carries_its_nodes_mode_and_a_compact_dra_view(snap):
    r = rows(snap)
    assert {n: row["node"]["mode"] for n, row in r.items()} == {
        "dra-ok": "dra",
        "dra-lost": "dra",
        "dra-swapped": "dra",
        "dra-old-driver": "dra",
        "dra-noslice": "none",
        "dra-mig": "dra",
        "dra-down": "dra",
        "dra-nonvml": "dra",
        "both-0": "both",
        "er-0": "extended-resource",
    }
    assert r["dra-ok"]["node"]["dra"] == {
        "devices": 8,
        "device_types": {"gpu": 8},
        "products": {"NVIDIA H100 80GB HBM3": 8},
        "gpus_published": 8,
        "allocated": 1,
        "free": 7,
        "tainted": 0,
        "driver_versions": ["570.124.6"],
        "taints": [],
        "pools": [{"name": "dra-ok", "generation": 1, "complete": True, "slices": 1, "stale_slices": 0}],
        "plugin_ready": False,
        "problems": [],
    }
    assert "devices" in r["dra-ok"]["node"]["dra"] and "attributes" not in json.dumps(r["dra-ok"]["node"]["dra"])
    assert r["er-0"]["node"]["dra"] is None


def test_a_dra_only_node_takes_its_pool_from_the_published_product(snap):
    r = rows(snap)
    assert r["dra-ok"]["pool"] == "NVIDIA H100 80GB HBM3"
    assert r["dra-mig"]["pool"] == "NVIDIA A100-SXM4-80GB"
    assert r["er-0"]["pool"] == "unknown"  # no product label, no DRA device


def test_device_taints_and_pools_are_in_the_summary(snap):
    dra = rows(snap)["dra-old-driver"]["node"]["dra"]
    assert dra["taints"] == [{"device": "gpu-0", "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    assert (dra["tainted"], dra["free"]) == (1, 0)
    noslice = rows(snap)["dra-noslice"]["node"]["dra"]
    assert (noslice["devices"], noslice["pools"]) == (0, [])
    assert noslice["problems"] == ["no ResourceSlice of driver gpu.nvidia.com: the node offers no device to claims"]


def test_an_incomplete_pool_shows_its_generation_and_publishes_nothing():
    hosts = {"n": host("lab", "n", "p")}
    slices = [dra_slice("n", [dra_device(i) for i in range(8)], generation=2, count=2)]
    clusters = {"lab": dra_cluster_result([dra_node("n")], slices)}
    row = _audit.build_snapshot(hosts, clusters, NOW)["fleet"][0]
    assert row["node"]["dra"]["pools"] == [
        {"name": "n", "generation": 2, "complete": False, "slices": 1, "stale_slices": 0}
    ]
    assert kinds(row) == ["dra_count_vs_nvml", "dra_gpu_unpublished"]


def test_each_nvml_gpu_is_marked_published_by_uuid(snap):
    r = rows(snap)
    assert [g["dra_published"] for g in r["dra-ok"]["gpus"]] == [True] * 8
    assert r["dra-ok"]["gpus"][3]["dra_devices"] == ["gpu-3"]
    assert [g["dra_published"] for g in r["dra-lost"]["gpus"]] == [True] * 7 + [False]
    assert r["dra-lost"]["gpus"][7]["dra_devices"] == []
    assert [g["dra_devices"] for g in r["dra-mig"]["gpus"]] == [
        ["gpu-0-mig-0", "gpu-0-mig-1"],
        ["gpu-1-mig-0", "gpu-1-mig-1"],
    ]
    assert {g["dra_published"] for g in r["er-0"]["gpus"]} == {None}  # not a DRA node: not known, not false


def test_healthy_dra_nodes_have_no_mismatch_even_without_an_extended_resource(snap):
    r = rows(snap)
    for name in ("dra-ok", "dra-mig", "both-0", "er-0"):
        assert r[name]["mismatches"] == [], name


def test_a_gpu_nvml_sees_that_is_not_published_is_drift(snap):
    (count, unpublished) = rows(snap)["dra-lost"]["mismatches"]
    assert count == {
        "kind": "dra_count_vs_nvml",
        "host_value": 8,
        "cluster_value": 7,
        "evidence": "NVML counts 8 GPU(s), the node's ResourceSlices publish 7",
    }
    assert unpublished["kind"] == "dra_gpu_unpublished" and unpublished["host_value"] == "GPU-0007"
    assert unpublished["evidence"] == "no DRA device published for the GPU(s) NVML sees: GPU-0007"


def test_a_published_device_nvml_does_not_know_is_drift_even_when_the_counts_agree(snap):
    row = rows(snap)["dra-swapped"]
    assert kinds(row) == ["dra_gpu_unpublished", "dra_device_unknown"]
    unknown = row["mismatches"][1]
    assert (unknown["host_value"], unknown["cluster_value"]) == (None, "GPU-0099")
    assert unknown["evidence"] == "published device(s) whose GPU NVML does not know: gpu-7 (GPU-0099)"


def test_a_published_driver_version_is_compared_as_a_version_with_nvmls(snap):
    (driver,) = rows(snap)["dra-old-driver"]["mismatches"]
    assert (driver["kind"], driver["host_value"], driver["cluster_value"]) == (
        "dra_driver_vs_nvml",
        "570.124.06",
        "550.127.8",
    )
    # 570.124.6 published for NVML's 570.124.06 is the same version: dra-ok has no such mismatch
    assert "dra_driver_vs_nvml" not in kinds(rows(snap)["dra-ok"])


def test_a_dra_node_without_slices_has_every_nvml_gpu_unpublished(snap):
    row = rows(snap)["dra-noslice"]
    assert kinds(row) == ["dra_count_vs_nvml", "dra_gpu_unpublished"]
    assert row["mismatches"][0]["cluster_value"] == 0
    assert row["mismatches"][1]["host_value"] == ", ".join("GPU-%04d" % i for i in range(8))


def test_unknown_host_facts_are_unknown_not_drift(snap):
    r = rows(snap)
    assert (r["dra-down"]["status"], r["dra-down"]["mismatches"]) == ("unreachable", [])
    assert r["dra-down"]["node"]["dra"]["gpus_published"] == 8  # the cluster's side is still reported
    assert [m["kind"] for m in r["dra-nonvml"]["mismatches"]] == []
    assert r["dra-nonvml"]["findings"][0]["reason"] == "nvml_no_gpu"


def test_a_node_in_both_modes_keeps_the_allocatable_check():
    hosts = {"both-0": host("lab", "both-0", "p")}
    clusters = {"lab": dra_cluster_result([dra_node("both-0", extended=7)], [dra_slice("both-0", [dra_device(0)])])}
    row = _audit.build_snapshot(hosts, clusters, NOW)["fleet"][0]
    assert kinds(row) == ["gpu_count_vs_allocatable", "dra_count_vs_nvml", "dra_gpu_unpublished"]


def test_the_summary_counts_the_dra_mismatches_with_the_others(snap):
    assert snap["summary"]["mismatches"] == sum(len(r["mismatches"]) for r in snap["fleet"]) == 2 + 2 + 1 + 2


# ------------------------------------------------------------------------------------------------
# changes since a snapshot


def as_schema_1_0(snapshot):
    """What a 1.0 audit wrote for the same fleet: no DRA keys, no DRA mismatch."""
    old = copy.deepcopy(snapshot)
    old["schema_version"] = "1.0"
    del old["summary"]["dra_nodes"]
    for c in old["clusters"]:
        del c["dra_problems"]
    for r in old["fleet"]:
        if r["node"] is not None:
            del r["node"]["mode"], r["node"]["dra"]
        for g in r["gpus"]:
            del g["dra_published"], g["dra_devices"]
        r["mismatches"] = [m for m in r["mismatches"] if not m["kind"].startswith("dra_")]
    return old


def test_a_1_0_snapshot_still_validates_and_is_a_baseline_without_dra_changes(snap):
    old = as_schema_1_0(snap)
    jsonschema.Draft202012Validator(SCHEMA).validate(old)
    assert _changes.check_baseline(old, "old.json") is old
    hosts, clusters = dra_fleet()
    after = _audit.build_snapshot(hosts, clusters, NOW, baseline=old)
    assert after["changes"]["total"] == 0
    assert after["baseline"] == {"generated_at": NOW, "schema_version": "1.0"}


def test_against_a_1_1_baseline_dra_drift_and_mode_changes_are_reported(snap):
    hosts, clusters = dra_fleet()
    nodes = [dra_node("dra-ok", extended=8), dra_node("dra-lost")]
    slices = [
        dra_slice("dra-ok", [dra_device(i) for i in range(8)]),
        dra_slice("dra-lost", [dra_device(i) for i in range(8)]),
    ]
    clusters = {"lab": dra_cluster_result(nodes, slices)}
    hosts = {n: hosts[n] for n in ("dra-ok", "dra-lost")}
    after = _audit.build_snapshot(hosts, clusters, NOW, baseline=snap)
    ch = after["changes"]
    assert {(c["id"], c["field"], c["before"], c["after"]) for c in ch["fields"]} == {
        ("lab/dra-ok", "mode", "dra", "both"),
        ("lab/dra-ok", "allocatable_gpus", None, 8),
        ("lab/dra-lost", "dra_gpus_published", 7, 8),
    }
    assert [(m["id"], m["kind"]) for m in ch["mismatches_resolved"]] == [
        ("lab/dra-lost", "dra_count_vs_nvml"),
        ("lab/dra-lost", "dra_gpu_unpublished"),
    ]


# ------------------------------------------------------------------------------------------------
# reports


def test_markdown_has_a_dra_section_with_a_row_per_dra_node(snap):
    md = _md.render_markdown(snap)
    assert "- Nodes using DRA: 9; with NVML/DRA drift: 4" in md
    section = md.split("## DRA\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| lab/")]
    assert len(lines) == 9 and not any("lab/er-0" in line for line in lines)
    (lost,) = [line for line in lines if line.startswith("| lab/dra-lost ")]
    assert "| dra | gpu 7 | 7 / 8 | 0 | 7 | 0 | 570.124.6 | dra-lost gen 1 |" in lost
    assert lost.endswith(
        "| dra_count_vs_nvml, dra_gpu_unpublished | publishes 7 device(s), 1 fewer than other nodes with NVIDIA H100 "
        "80GB HBM3 (8) |"
    )
    assert "dra_gpu_unpublished (host GPU-0007, cluster -)" in md  # the findings and mismatches table
    (nonvml,) = [line for line in lines if line.startswith("| lab/dra-nonvml ")]
    assert "| 8 / - |" in nonvml  # NVML unavailable: its count is unknown, not 0


def test_html_has_a_dra_table_whose_drift_codes_link_to_their_fix(snap):
    page = html_dom.parse(_page.render_html(snap))
    _headers, table = html_dom.table(page, "dra")
    cells = {c["node"].text.strip(): c for _tr, c in table}
    assert sorted(cells) == sorted("lab/" + n for n in rows(snap) if n != "er-0")
    links = cells["lab/dra-swapped"]["drift"].all("a")
    assert [a.attrs["href"] for a in links] == ["#fix-dra_gpu_unpublished", "#fix-dra_device_unknown"]
    assert {x.attrs["id"] for x in page.all("dt")} >= {"fix-dra_gpu_unpublished", "fix-dra_device_unknown"}
    assert "device gpu-0 is tainted gpu.nvidia.com/xid=79:NoSchedule" in cells["lab/dra-old-driver"]["problems"].text
    assert page.one("b", **{"data-k": "dra_nodes"}).text == "9"


def test_a_fleet_without_dra_has_no_dra_section_in_either_report():
    hosts, clusters = two_clusters()
    snap = _audit.build_snapshot(hosts, clusters, NOW)
    assert snap["summary"]["dra_nodes"] == 0
    md = _md.render_markdown(snap)
    assert "DRA" not in md
    page = _page.render_html(snap)
    assert 'id="dra"' not in page and "DRA" not in page
