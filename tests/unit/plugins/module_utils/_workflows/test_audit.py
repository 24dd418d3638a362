"""Specification of module_utils/_workflows/audit/join.py and its parts: join, drift, health, mismatches, changes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from audit_fixtures import UNREACHABLE, cluster_result, gpu, host, node, nvml_result, two_clusters  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import changes as _changes  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import join as _audit  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.audit import schema as _schema  # noqa: E402

SCHEMA = json.loads((Path(__file__).resolve().parents[5] / "docs" / "audit-snapshot.schema.json").read_text())
NOW = "2026-12-03T15:00:00Z"


@pytest.fixture
def snap():
    hosts, clusters = two_clusters()
    return _audit.build_snapshot(hosts, clusters, NOW)


def rows(snap):
    return {r["id"]: r for r in snap["fleet"]}


def test_the_snapshot_validates_against_the_published_schema(snap):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(snap)
    assert snap["schema_version"] == _schema.SCHEMA_VERSION == "1.2"
    assert SCHEMA["properties"]["kind"]["const"] == _schema.SNAPSHOT_KIND


def test_the_schema_rejects_a_row_without_status(snap):
    del snap["fleet"][0]["status"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(snap, SCHEMA)


def test_every_host_and_every_unclaimed_gpu_node_is_a_row(snap):
    assert {rid: r["status"] for rid, r in rows(snap).items()} == {
        "east/h100-0": "ok",
        "east/h100-1": "ok",
        "east/h100-2": "ok",
        "east/h100-3": "unreachable",
        "east/h100-9": "not_in_inventory",
        "west/a100-0": "ok",
        "west/a100-1": "ok",
    }
    assert snap["summary"]["statuses"] == {
        "ok": 5,
        "unreachable": 1,
        "failed": 0,
        "not_audited": 0,
        "not_in_inventory": 1,
    }
    assert (snap["summary"]["hosts"], snap["summary"]["rows"], snap["summary"]["clusters"]) == (6, 7, 2)


def test_an_unreachable_host_is_recorded_with_its_reason_and_its_node(snap):
    r = rows(snap)["east/h100-3"]
    assert r["host"] == "east-h100-3" and r["facts"] is None and r["gpus"] == []
    assert "Connection refused" in r["message"]
    assert r["node"]["allocatable_gpus"] == 8  # the cluster still sees the node
    assert r["mismatches"] == []  # nothing to compare without facts


def test_a_failed_fact_task_is_failed_and_a_host_without_results_not_audited():
    hosts = {
        "a": {"cluster": "c", "node_name": "a", "pool": "p", "host_facts_result": {"failed": True, "msg": "boom"}},
        "b": {"cluster": "c", "node_name": "b", "pool": "p"},
    }
    snap = _audit.build_snapshot(hosts, {"c": {"result": {"nodes": {}}}}, NOW)
    assert [(r["host"], r["status"], r["message"]) for r in snap["fleet"]] == [
        ("a", "failed", "boom"),
        ("b", "not_audited", "the fact tasks did not run on this host (excluded by --limit or an earlier stop)"),
    ]


def test_the_join_uses_the_node_name_not_the_inventory_name(snap):
    r = rows(snap)["east/h100-2"]
    assert (r["host"], r["node_name"], r["node"]["name"]) == ("east-h100-2", "h100-2", "h100-2")
    assert r["facts"]["driver"] == "550.127.08" and r["node"]["label_driver_version"] == "570.124.06"


def test_degraded_gpus_are_classified_by_category_and_severity(snap):
    found = {(f["gpu"], f["category"], f["severity"], f["reason"]) for f in rows(snap)["east/h100-1"]["findings"]}
    assert found == {
        (2, "remapped_rows", "critical", "row_remap_pending_reset_required"),
        (3, "other", "warning", "sw_power_cap"),
        (5, "ecc", "critical", "uncorrectable_ecc_volatile"),
        (6, "thermal", "critical", "hw_thermal_slowdown"),
        (6, "thermal", "warning", "sw_thermal_slowdown"),
    }
    gpus = {g["index"]: (g["health"], g["reasons"]) for g in rows(snap)["east/h100-1"]["gpus"]}
    assert gpus[5] == ("critical", ["uncorrectable_ecc_volatile"]) and gpus[0] == ("ok", [])
    assert snap["summary"]["gpus_critical"] == 3 and snap["summary"]["gpus_warning"] == 1


def test_a_lost_gpu_is_an_xid_finding():
    lost = dict(
        gpu(4), error={"reason": "gpu_lost", "code": 15}, health={"status": "critical", "reasons": ["gpu_lost"]}
    )
    h = host("c", "n", "p", gpus=[gpu(0), lost])
    snap = _audit.build_snapshot({"n": h}, {"c": {"result": {"nodes": {}}}}, NOW)
    (finding,) = snap["fleet"][0]["findings"]
    assert (finding["gpu"], finding["category"], finding["severity"]) == (4, "xid", "critical")
    assert "Xid 79" in finding["evidence"]
    assert snap["fleet"][0]["gpus"][1]["error"] == "gpu_lost"


def test_a_hot_gpu_without_slowdown_gets_a_thermal_warning_at_the_threshold():
    h = host("c", "n", "p", gpus=[gpu(0, temperature_c=84), gpu(1, temperature_c=85)])
    snap = _audit.build_snapshot({"n": h}, {"c": {"result": {"nodes": {}}}}, NOW, thermal_warning_c=85)
    assert [(f["gpu"], f["reason"]) for f in snap["fleet"][0]["findings"]] == [(1, "temperature_high")]


def test_uncorrected_remapped_rows_without_pending_reset_are_a_warning():
    h = host("c", "n", "p", gpus=[gpu(0, remapped_rows={"uncorrected": 2})])
    snap = _audit.build_snapshot({"n": h}, {"c": {"result": {"nodes": {}}}}, NOW)
    assert [(f["category"], f["severity"]) for f in snap["fleet"][0]["findings"]] == [("remapped_rows", "warning")]


def test_nvml_unavailable_is_a_critical_host_finding(snap):
    r = rows(snap)["west/a100-1"]
    assert [(f["gpu"], f["reason"], f["severity"]) for f in r["findings"]] == [
        (None, "nvml_driver_not_loaded", "critical")
    ]
    assert r["mismatches"] == []  # no NVML count to compare with allocatable 0


def test_heat_map_cells_hold_the_worst_severity_and_affected_gpus(snap):
    pools = {(p["cluster"], p["pool"]): p for p in snap["pools"]}
    h100 = pools[("east", "h100")]["health"]
    assert {c: (v["severity"], v["gpus_affected"]) for c, v in h100.items()} == {
        "ecc": ("critical", 1),
        "remapped_rows": ("critical", 1),
        "xid": ("ok", 0),
        "thermal": ("critical", 1),
        "other": ("warning", 1),
    }
    assert pools[("east", "h100")]["gpus_degraded"] == 4
    assert pools[("west", "a100")]["health"]["other"]["severity"] == "critical"


def test_drift_lists_each_differing_field_with_majority_and_outliers(snap):
    (h100,) = [p for p in snap["pools"] if p["pool"] == "h100"]
    drift = {d["field"]: (d["majority"], d["outliers"]) for d in h100["drift"]}
    assert drift == {
        "driver": ("570.124.06", ["h100-2"]),
        "cuda": ("12.8", ["h100-2"]),
        "kernel": ("5.15.0-105-generic", ["h100-2"]),
        "vbios": ("96.00.99.00.01", ["h100-2"]),
        "runtime": ("containerd v2 default=nvidia nvidia=yes cdi=yes", ["h100-2"]),
    }
    # the unreachable host and the node without a host have no values and do not count
    (driver,) = [d for d in h100["drift"] if d["field"] == "driver"]
    assert driver["values"] == [
        {"value": "550.127.08", "nodes": ["h100-2"]},
        {"value": "570.124.06", "nodes": ["h100-0", "h100-1"]},
    ]
    assert snap["summary"]["drift"] == 5


def test_mig_layout_combines_the_node_label_and_nvml(snap):
    assert rows(snap)["west/a100-0"]["facts"]["mig_layout"] == "all-3g.40gb | mig 2/2"
    assert rows(snap)["east/h100-0"]["facts"]["mig_layout"] == "mig off"


def test_mismatches_compare_nvml_with_allocatable_and_the_driver_label(snap):
    got = {
        rid: [(m["kind"], m["host_value"], m["cluster_value"]) for m in r["mismatches"]]
        for rid, r in rows(snap).items()
    }
    assert got["east/h100-2"] == [
        ("gpu_count_vs_allocatable", 8, 7),
        ("driver_vs_label", "550.127.08", "570.124.06"),
    ]
    assert got["east/h100-0"] == [] and got["east/h100-1"] == []
    assert got["west/a100-0"] == []  # MIG: allocatable is mig-* slices, not GPUs


def test_a_host_without_a_node_is_a_mismatch_only_when_the_cluster_answered():
    h = {"x": host("c", "ghost", "p")}
    answered = _audit.build_snapshot(h, {"c": {"result": {"nodes": {}}}}, NOW)
    assert [m["kind"] for m in answered["fleet"][0]["mismatches"]] == ["node_missing"]
    silent = _audit.build_snapshot(h, {"c": {"result": {"failed": True, "msg": "x"}}}, NOW)
    assert silent["fleet"][0]["mismatches"] == []
    assert silent["clusters"][0]["status"] == "error" and silent["summary"]["clusters_failed"] == 1


def test_clusters_record_their_api_view(snap):
    east = snap["clusters"][0]
    assert (east["name"], east["status"], east["kubernetes_version"], east["gpu_nodes"]) == ("east", "ok", "v1.36.3", 5)
    assert east["gpu_allocatable"] == 39


def test_no_baseline_means_no_changes(snap):
    assert snap["baseline"] is None and snap["changes"] is None


def test_changes_against_a_baseline():
    hosts, clusters = two_clusters()
    before = _audit.build_snapshot(hosts, clusters, "2026-12-01T00:00:00Z")
    hosts2 = copy.deepcopy(hosts)
    hosts2["east-h100-0"]["host_facts_result"] = dict(UNREACHABLE)  # became unreachable (partial facts ignored)
    hosts2["east-h100-3"] = host("east", "h100-3", "h100")  # came back
    hosts2["east-h100-2"]["nvml_result"] = nvml_result([gpu(i) for i in range(8)])  # driver upgraded to 570
    hosts2["east-h100-2"]["nvml_result"]["ansible_facts"]["nvidia_gpu"]["gpus"][0] = gpu(
        0, vbios_version="96.00.74.00.11"
    )
    h1 = hosts2["east-h100-1"]["nvml_result"]["ansible_facts"]["nvidia_gpu"]["gpus"]
    h1[5] = gpu(5)  # ECC cleared
    h1[7] = gpu(7, remapped_rows={"failure": True})
    del hosts2["west-a100-1"]
    after = _audit.build_snapshot(hosts2, clusters, NOW, baseline=before)
    jsonschema.validate(after, SCHEMA)
    ch = after["changes"]
    assert after["baseline"] == {"generated_at": "2026-12-01T00:00:00Z", "schema_version": "1.2"}
    assert ch["added"] == [] and ch["removed"] == []  # a100-1 is still a GPU node: now not_in_inventory
    assert ch["status"] == [
        {"id": "east/h100-0", "before": "ok", "after": "unreachable"},
        {"id": "east/h100-3", "before": "unreachable", "after": "ok"},
        {"id": "west/a100-1", "before": "ok", "after": "not_in_inventory"},
    ]
    assert [(c["id"], c["field"], c["before"], c["after"]) for c in ch["fields"]] == [
        ("east/h100-2", "driver", "550.127.08", "570.124.06"),
        ("east/h100-2", "cuda", "12.4", "12.8"),
    ]
    assert [(f["id"], f["gpu"], f["reason"]) for f in ch["findings_new"]] == [("east/h100-1", 7, "row_remap_failure")]
    assert [(f["id"], f["gpu"], f["reason"]) for f in ch["findings_resolved"]] == [
        ("east/h100-1", 5, "uncorrectable_ecc_volatile")
    ]
    assert [(m["id"], m["kind"]) for m in ch["mismatches_resolved"]] == [("east/h100-2", "driver_vs_label")]
    assert ch["mismatches_new"] == []
    assert ch["total"] == 3 + 2 + 1 + 1 + 1


def test_rows_added_and_removed_against_a_baseline():
    hosts, clusters = two_clusters()
    before = _audit.build_snapshot({"east-h100-0": hosts["east-h100-0"]}, {"east": clusters["east"]}, NOW)
    after = _audit.build_snapshot(
        {"west-a100-0": hosts["west-a100-0"]}, {"west": clusters["west"]}, NOW, baseline=before
    )
    assert after["changes"]["added"] == ["west/a100-0", "west/a100-1"]
    assert after["changes"]["removed"] == ["east/h100-0", "east/h100-1", "east/h100-2", "east/h100-3", "east/h100-9"]


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "is not a gpu_audit snapshot"),
        ({"kind": "something-else"}, "is not a gpu_audit snapshot"),
        ({"kind": _schema.SNAPSHOT_KIND, "schema_version": "2.0"}, "has schema_version 2.0"),
        ({"kind": _schema.SNAPSHOT_KIND}, "has schema_version (none)"),
    ],
)
def test_a_baseline_must_be_a_snapshot_of_the_same_major_version(data, message):
    with pytest.raises(_changes.SnapshotError, match=r"^old\.json " + message.replace("(", r"\(").replace(")", r"\)")):
        _changes.check_baseline(data, "old.json")


def test_a_minor_version_baseline_is_accepted():
    data = {"kind": _schema.SNAPSHOT_KIND, "schema_version": "1.7"}
    assert _changes.check_baseline(data, "x") is data


def test_same_content_ignores_only_the_timestamp(snap):
    other = dict(copy.deepcopy(snap), generated_at="2030-01-01T00:00:00Z")
    assert _changes.same_content(snap, other)
    other["summary"]["gpus"] += 1
    assert not _changes.same_content(snap, other)
    assert not _changes.same_content(None, snap)


def test_a_hot_gpu_counts_as_degraded_even_when_nvml_says_ok():
    h = host("c", "n", "p", gpus=[gpu(0, temperature_c=90)])
    assert h["nvml_result"]["ansible_facts"]["nvidia_gpu"]["gpus"][0]["health"]["status"] == "ok"
    snap = _audit.build_snapshot({"n": h}, {"c": {"result": {"nodes": {}}}}, NOW)
    assert snap["fleet"][0]["gpus"][0]["health"] == "warning"
    assert snap["fleet"][0]["facts"]["gpus_degraded"] == 1 and snap["summary"]["gpus_warning"] == 1


def _mig_gpu(i, on):
    return gpu(i, mig={"current": on, "pending": on, "devices": [{"index": 0}] * (7 if on else 0)})


@pytest.mark.parametrize(
    "config, mig, mismatch",
    [
        ("all-disabled", [False, False], False),
        ("all-disabled", [True, False], True),  # the label says off, NVML has MIG on GPU 0
        ("all-1g.10gb", [True, True], False),
        ("all-1g.10gb", [True, False], True),  # GPU 1 never switched to MIG
        ("custom-layout", [True, False], False),  # not an all-* config: nothing to compare
    ],
)
def test_mig_mode_is_compared_with_an_all_star_mig_config_label(config, mig, mismatch):
    raw = node("n", count=2, mig={"config": config, "allocatable": {"nvidia.com/mig-1g.10gb": 7}})
    h = host("c", "n", "p", gpus=[_mig_gpu(i, on) for i, on in enumerate(mig)])
    snap = _audit.build_snapshot({"n": h}, {"c": cluster_result([raw])}, NOW)
    kinds = [m["kind"] for m in snap["fleet"][0]["mismatches"]]
    assert kinds == (["mig_vs_label"] if mismatch else [])
    jsonschema.validate(snap, SCHEMA)


def test_an_inline_kubeconfig_is_never_recorded():
    secret = {"users": [{"name": "u", "user": {"token": "s3cr3t"}}]}
    snap = _audit.build_snapshot({}, {"c": {"result": {"nodes": {}}, "kubeconfig": secret}}, NOW)
    assert snap["clusters"][0]["kubeconfig"] == "(inline)" and "s3cr3t" not in json.dumps(snap)
    jsonschema.validate(snap, SCHEMA)
