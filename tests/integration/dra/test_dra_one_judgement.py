"""One judgement of a node on the ci-dra bed: with every node fault of the simulated DRA driver at once (no slice; a
slice that lists 7 of the node's 8 GPUs beside a crash-looping kubelet plugin; a tainted device; a stale pool
generation), gpu_validate_report (the tests' site play), gpu_triage_info (node mode, given each host's NVML facts)
and gpu_audit_report (playbooks/audit.yml) name the same layer and the same codes for every node."""

from __future__ import annotations

import json

import pytest

from tests.integration.dra.dra_faults import NODE_FAULTS

#: The codes each faulty node must get, lowest layer first, from every workflow.
EXPECTED = {
    "h100-0": ["NoResourceSlice"],
    "h100-1": ["DraPluginNotReady", "DevicesNotAsNVML"],
    "h100-2": ["DeviceTainted"],
    "a100-0": ["PoolIncomplete", "StaleSlices"],  # no complete pool: nothing published to compare with NVML
}


@pytest.fixture(scope="module")
def judged(node_fault_runs):
    """``{workflow: {node: [(layer, code), ...]}}`` of the node and dra layers."""
    _rc, report, _out = node_fault_runs["validate"]
    snapshot = json.loads(node_fault_runs["audit"][0])
    return {
        "validate": {
            row["node"]: [(f["layer"], f["code"]) for f in row["findings"] if f.get("code")] for row in report["rows"]
        },
        "triage": {
            node: [(f["layer"], f["reason"]) for f in result["findings"] if f["layer"] in ("node", "dra")]
            for node, result in node_fault_runs["triage"].items()
        },
        "audit": {
            row["node_name"]: [(f["layer"], f["code"]) for f in row["judgement"]["findings"]]
            for row in snapshot["fleet"]
        },
    }


def test_the_faults_cover_every_gpu_node(dra):
    assert sorted(EXPECTED) == sorted(NODE_FAULTS) == sorted(dra.gpu_nodes)


@pytest.mark.parametrize("workflow", ["validate", "triage", "audit"])
def test_each_workflow_names_the_dra_layer_and_the_same_codes_for_every_node(judged, workflow):
    assert {node: [c for _layer, c in found] for node, found in judged[workflow].items()} == EXPECTED
    assert {layer for found in judged[workflow].values() for layer, _code in found} == {"dra"}


def test_the_node_whose_slice_lacks_a_gpu_is_named_by_triage_only_with_its_hosts_nvml_facts(node_fault_runs):
    finding = next(f for f in node_fault_runs["triage"]["h100-1"]["findings"] if f["reason"] == "DevicesNotAsNVML")
    assert finding["message"].startswith(
        "the node's ResourceSlices publish 7 GPU(s), NVML counts 8; not published: GPU-"
    )
    assert finding["nodes"] == ["h100-1"] and finding["evidence"]["not_published"][0].startswith("GPU-")


def test_the_first_failing_layer_agrees(node_fault_runs):
    _rc, report, _out = node_fault_runs["validate"]
    snapshot = json.loads(node_fault_runs["audit"][0])
    validate = {row["node"]: row["failing_layer"] for row in report["rows"]}
    triage = {node: result["first_failing_layer"] for node, result in node_fault_runs["triage"].items()}
    audit = {row["node_name"]: row["judgement"]["failing_layer"] for row in snapshot["fleet"]}
    assert validate == triage == audit == dict.fromkeys(NODE_FAULTS, "dra")
