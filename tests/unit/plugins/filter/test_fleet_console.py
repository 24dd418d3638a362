"""The fleet_console filter: the console summary of a fleet validation - totals, then each failing node with its layer,
evidence, fix and the first command to paste, chosen from the layer and the node's operand pods."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
from fleet_fixtures import mixed_fleet, mixed_summary  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_console import FilterModule  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.owners import fix_command  # noqa: E402


def console(summary, nodes=None, **kw):
    return FilterModule().filters()["fleet_console"](summary, nodes, **kw)


def row(layer, check, node="gpu-0", evidence="it broke", fix="Fix it."):
    return {
        "node": node,
        "host": node + "-host",
        "pool": "p",
        "verdict": "fail",
        "failing_layer": layer,
        "findings": [{"check": check, "layer": layer, "evidence": evidence, "fix": fix}],
    }


def pod(name, ready=True, waiting=None, phase="Running"):
    return {"name": name, "ready": ready, "waiting_reason": waiting, "phase": phase}


def test_the_totals_come_first_with_the_failing_layers_in_layer_order_then_the_passing_nodes():
    lines = console(mixed_summary(), mixed_fleet()[1])
    assert lines[0] == (
        "GPU validation: 6 passed, 4 failed of 10 GPU nodes (driver 1, toolkit 1, device-plugin 1, gpu-health 1)"
    )
    assert lines[1] == "passed: a100-0, h100-0, h100-1, h100-2, l40s-0, l40s-1"


def test_each_failing_node_is_one_block_lowest_layer_first_with_evidence_fix_and_a_command():
    lines = console(mixed_summary(), mixed_fleet()[1])
    heads = [line for line in lines if line.startswith("FAIL ")]
    assert [h.split(" ")[1] for h in heads] == ["h100-3", "a100-1", "h100-4", "l40s-2"]
    toolkit = lines.index(next(h for h in heads if h.startswith("FAIL a100-1 ")))
    assert lines[toolkit].startswith("FAIL a100-1 (pool a100) at toolkit: operand pods on the node wait in")
    assert 'no runtime for "nvidia" is configured' in lines[toolkit]  # the evidence in full, not cut to a column
    assert lines[toolkit + 1].startswith("  fix: The container runtime has no nvidia runtime handler")
    assert lines[toolkit + 2] == "  run: kubectl -n gpu-operator logs container-toolkit-a100 --all-containers --tail=50"
    assert all(any(x.startswith("  run: ") for x in lines[lines.index(h) :][:6]) for h in heads)


def test_a_passing_fleet_prints_the_totals_and_the_reports_only():
    s = {"rows": [{"node": "a", "verdict": "pass"}], "passed": 1, "failed": 0, "failed_by_layer": {}, "layers": []}
    assert console(s, reports=["/r/gpu-validate.json", "/r/gpu-validate.md"]) == [
        "GPU validation: 1 passed, 0 failed of 1 GPU nodes",
        "reports: /r/gpu-validate.json, /r/gpu-validate.md",
    ]


def test_at_most_limit_failing_nodes_are_shown_and_the_rest_counted():
    rows = [row("device-plugin", "allocatable", node="n-%d" % i) for i in range(5)]
    s = {"rows": rows, "passed": 0, "failed": 5, "failed_by_layer": {"device-plugin": 5}, "layers": ["device-plugin"]}
    lines = console(s, limit=2)
    assert [x for x in lines if x.startswith("FAIL ")] == [
        "FAIL n-0 (pool p) at device-plugin: it broke",
        "FAIL n-1 (pool p) at device-plugin: it broke",
    ]
    assert lines[-1] == "3 more failing node(s) in the reports"


def test_higher_failing_layers_are_named_as_likely_consequences():
    r = row("device-plugin", "allocatable")
    r["findings"].append({"check": "smoke", "layer": "scheduling", "evidence": "Pending", "fix": "x"})
    s = {"rows": [r], "passed": 0, "failed": 1, "failed_by_layer": {"device-plugin": 1}, "layers": []}
    assert console(s)[-1] == "  also failing (often a consequence): scheduling"


def test_the_command_reads_the_logs_of_the_layers_pod_on_the_node():
    node = {"operands": {"device-plugin": pod("dp-1"), "container-toolkit": pod("tk-1"), "mig-manager": pod("mm-1")}}
    assert fix_command(row("device-plugin", "allocatable"), node) == (
        "kubectl -n gpu-operator logs dp-1 --all-containers --tail=50"
    )
    assert fix_command(row("toolkit", "operands"), node, "ops") == "kubectl -n ops logs tk-1 --all-containers --tail=50"
    assert fix_command(row("mig", "mig"), node).endswith("logs mm-1 --all-containers --tail=50")


def test_a_pod_that_has_not_started_is_described_not_logged():
    node = {"operands": {"dcgm-exporter": pod("dcgm-1", ready=False, waiting="ContainerCreating")}}
    assert fix_command(row("monitoring", "monitoring"), node) == "kubectl -n gpu-operator describe pod dcgm-1"
    node = {"operands": {"driver": pod("drv-1", ready=False, phase="Pending")}}
    assert fix_command(row("driver", "operands"), node) == "kubectl -n gpu-operator describe pod drv-1"


def test_failed_labels_point_at_gpu_feature_discovery():
    node = {"operands": {"gpu-feature-discovery": pod("gfd-1"), "device-plugin": pod("dp-1")}}
    assert "logs gfd-1 " in fix_command(row("device-plugin", "labels"), node)


def test_node_level_layers_describe_the_node():
    for layer, check in (("gpu-health", "allocatable"), ("scheduling", "smoke"), ("workload", "smoke"), ("node", "")):
        assert fix_command(row(layer, check), {"operands": {}}) == "kubectl describe node gpu-0"
    assert fix_command(row("node", "node"), None) == "kubectl get nodes -o wide"


def test_a_host_whose_nvml_sees_no_gpu_is_checked_on_the_host():
    assert fix_command(row("driver", "host"), {"operands": {}}) == "ssh gpu-0-host nvidia-smi"


def test_a_host_installed_driver_failing_validation_reads_the_validator():
    node = {"operands": {"operator-validator": pod("val-1", ready=False, waiting="CrashLoopBackOff")}}
    assert fix_command(row("driver", "operands"), node) == (
        "kubectl -n gpu-operator logs val-1 --all-containers --tail=50"
    )


def test_a_missing_pod_lists_the_nodes_operand_pods():
    assert fix_command(row("toolkit", "operands"), {"operands": {}}) == (
        "kubectl -n gpu-operator get pods -o wide --field-selector spec.nodeName=gpu-0"
    )
    assert fix_command(row("monitoring", "monitoring"), {"operands": {}}) == (
        "kubectl get node gpu-0 -L nvidia.com/gpu.deploy.dcgm-exporter"
    )


def test_a_passing_row_has_no_command():
    assert fix_command({"node": "a", "verdict": "pass", "failing_layer": None}, {}) is None
