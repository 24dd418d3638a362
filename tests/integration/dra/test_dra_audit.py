"""playbooks/audit.yml on the ci-dra bed (GPUs reached through DRA only), as the least-privilege identity of the bed's
inventory, with the real fact modules on every GPU host (fake host tree and NVML fixture per host): each row has its
node's mode and DRA view, every NVML GPU is published by UUID, and the simulated driver's node faults show as drift
between NVML and the published devices, in the JSON, the Markdown and the HTML."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.integration.workflows import Workflows

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "docs" / "audit-snapshot.schema.json").read_text())


@pytest.fixture(scope="module")
def audit(dra, tmp_path_factory):
    """``audit(name)`` -> (snapshot, Markdown, HTML) of one audit run on the bed's inventory."""
    return Workflows(dra.bed, tmp_path_factory.mktemp("dra-audit")).audit


@pytest.fixture(scope="module")
def healthy(dra, audit):
    dra.wait_healthy(timeout=120)
    text, md, html = audit("healthy")
    return json.loads(text), md, html


@pytest.fixture(scope="module")
def faulty(node_fault_runs):
    text, md, html = node_fault_runs["audit"]
    return json.loads(text), md, html


def rows(snap):
    return {r["node_name"]: r for r in snap["fleet"]}


def test_every_row_is_a_dra_node_whose_nvml_gpus_are_all_published(dra, healthy):
    snap, _md, _html = healthy
    jsonschema.validate(snap, SCHEMA)
    r = rows(snap)
    assert sorted(r) == sorted(dra.gpu_nodes)
    for name, row in r.items():
        assert (row["status"], row["node"]["mode"]) == ("ok", "dra"), name
        assert row["mismatches"] == [], (name, row["mismatches"])  # no allocatable check on a DRA-only node
        assert [g["dra_published"] for g in row["gpus"]] == [True] * 8, name
        dra_view = row["node"]["dra"]
        assert (dra_view["gpus_published"], dra_view["problems"], dra_view["taints"]) == (8, [], []), name
    assert r["a100-0"]["node"]["dra"]["device_types"] == {"mig": 42, "gpu": 2}
    assert r["a100-0"]["node"]["dra"]["driver_versions"] == ["550.127.5"]  # NVML's 550.127.05, the same version
    assert len(r["a100-0"]["gpus"][0]["dra_devices"]) == 7  # a MIG GPU is published through its 7 MIG devices
    assert snap["summary"]["dra_nodes"] == 4 and snap["summary"]["mismatches"] == 0


def test_the_reports_have_a_dra_section(healthy):
    _snap, md, html = healthy
    assert "- Nodes using DRA: 4; with NVML/DRA drift: 0" in md
    assert "| default/h100-0 | dra | gpu 8 | 8 / 8 | 0 | 8 | 0 | 570.124.6 | h100-0 gen " in md
    assert '<table id="dra">' in html and 'data-id="default/a100-0"' in html


def test_each_node_fault_is_drift_or_a_problem_in_the_nodes_dra_view(faulty):
    snap, md, _html = faulty
    jsonschema.validate(snap, SCHEMA)
    r = rows(snap)
    kinds = {n: [m["kind"] for m in row["mismatches"]] for n, row in r.items()}
    assert kinds == {
        "h100-0": ["dra_count_vs_nvml", "dra_gpu_unpublished"],  # dra-slice-missing
        "h100-1": ["dra_count_vs_nvml", "dra_gpu_unpublished"],  # dra-fewer-devices
        "h100-2": [],  # dra-device-taint: a problem, not drift
        "a100-0": ["dra_count_vs_nvml", "dra_gpu_unpublished"],  # dra-stale-generation: nothing allocatable
    }
    (count, unpublished) = r["h100-1"]["mismatches"]
    assert (count["host_value"], count["cluster_value"]) == (8, 7)
    (missing,) = [g for g in r["h100-1"]["gpus"] if not g["dra_published"]]
    assert unpublished["host_value"] == missing["uuid"]
    assert r["h100-0"]["node"]["mode"] == "none" and r["h100-0"]["mismatches"][0]["cluster_value"] == 0
    (taint,) = r["h100-2"]["node"]["dra"]["taints"]
    assert (taint["device"], taint["key"], taint["effect"]) == ("gpu-0", "gpu.nvidia.com/xid", "NoSchedule")
    (pool,) = r["a100-0"]["node"]["dra"]["pools"]
    assert pool["complete"] is False and pool["stale_slices"] == 1
    assert "- Nodes using DRA: 4; with NVML/DRA drift: 3" in md
