"""The fleet_report_json filter: a fleet validation summary as a versioned JSON report whose timestamp sits outside
the compared content, so an unchanged fleet gives the same bytes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
from fleet_fixtures import mixed_summary  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_report_json import FilterModule  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule as Summary  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (  # noqa: E402
    FleetInputs,
    fleet_summary,
)

SCHEMA = json.loads((Path(__file__).resolve().parents[4] / "docs" / "validate-report.schema.json").read_text())
FIRST, LATER = "2026-12-03T15:00:00Z", "2026-12-04T09:30:00Z"


def report(summary, **kw):
    return FilterModule().filters()["fleet_report_json"](summary, **kw)


def summary():
    """As the fleet_summary filter returns it: with the printed table."""
    s = mixed_summary()
    s["lines"] = ["the printed table"]
    return s


def test_the_report_is_versioned_and_holds_the_summary_without_the_printed_table():
    doc = json.loads(report(summary(), generated=FIRST))
    assert (doc["kind"], doc["schema_version"], doc["generated_at"]) == (
        "gpuops.gpu_operator/validation-report",
        "1.7",
        FIRST,
    )
    assert sorted(doc) == ["generated_at", "kind", "report", "schema_version"]
    assert "lines" not in doc["report"] and doc["report"] == json.loads(json.dumps(mixed_summary()))
    assert (doc["report"]["passed"], doc["report"]["failed"]) == (6, 4)


def test_the_report_follows_its_published_schema():
    jsonschema.validate(json.loads(report(summary(), generated=FIRST)), SCHEMA)
    jsonschema.validate(json.loads(report(summary())), SCHEMA)  # generated_at null when not given
    hosts = {"a": {"node_name": "gpu-0", "pool": None, "nvidia_gpu": {}}}
    jsonschema.validate(json.loads(report(Summary().filters()["fleet_summary"](hosts, {}))), SCHEMA)


def test_keys_are_sorted_and_the_text_ends_with_one_newline():
    text = report(summary(), generated=FIRST)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("as_text", [True, False], ids=["previous as text", "previous as a dict"])
def test_an_unchanged_fleet_keeps_the_previous_timestamp_and_bytes(as_text):
    first = report(summary(), generated=FIRST)
    again = report(summary(), generated=LATER, previous=first if as_text else json.loads(first))
    assert again == first


def test_a_changed_verdict_takes_the_new_timestamp():
    first = report(summary(), generated=FIRST)
    changed = summary()
    changed["rows"][0]["evidence"] = ["something new"]
    doc = json.loads(report(changed, generated=LATER, previous=first))
    assert doc["generated_at"] == LATER and doc["report"]["rows"][0]["evidence"] == ["something new"]


@pytest.mark.parametrize(
    "previous",
    ["", "   ", "{not json", "[]", None, json.dumps({"kind": "other", "report": {}, "generated_at": FIRST})],
    ids=["empty", "blank", "not JSON", "not an object", "none", "another kind"],
)
def test_an_unusable_previous_report_is_ignored(previous):
    assert json.loads(report(summary(), generated=LATER, previous=previous))["generated_at"] == LATER


def test_another_schema_version_is_not_compared():
    older = json.loads(report(summary(), generated=FIRST))
    older["schema_version"] = "0.9"
    assert json.loads(report(summary(), generated=LATER, previous=older))["generated_at"] == LATER


def test_the_smoke_pods_name_and_duration_never_reach_the_report():
    hosts = {"a": {"node_name": "gpu-0", "pool": "p", "nvidia_gpu": {"available": True, "gpu_count": 1}}}
    node = {
        "allocatable": {"nvidia.com/gpu": 1},
        "operands": {},
        "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "T4", "nvidia.com/gpu.count": "1"},
        "ready": True,
        "gpu": {"product": "T4"},
    }
    runs = [
        report(
            fleet_summary(
                hosts, {"gpu-0": node}, FleetInputs(smoke={"gpu-0": {"status": "passed", "pod": pod, "duration": d}})
            ),
            generated=when,
        )
        for pod, d, when in (("smoke-1a2b", 4.2, FIRST), ("smoke-9f8e", 5.7, LATER))
    ]
    assert report(json.loads(runs[1])["report"], generated=LATER, previous=runs[0]) == runs[0]
    assert "smoke-1a2b" not in runs[0]
