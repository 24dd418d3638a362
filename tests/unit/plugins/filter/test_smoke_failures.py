"""The smoke_failures filter: every node that did not pass in a list of gpu_smoke_test results."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.smoke_failures import FilterModule


def failures(runs):
    return FilterModule().filters()["smoke_failures"](runs)


def test_every_node_that_did_not_pass_in_result_and_node_order():
    smoke = {"nodes": {"n-0": {"status": "passed"}, "n-1": {"status": "failed", "reason": "exit code 1"}}}
    workload = {"nodes": {"n-0": {"status": "pending", "reason": None}, "n-1": {"status": "passed"}}}
    assert failures([smoke, workload]) == ["n-1: failed (exit code 1)", "n-0: pending ()"]


def test_skipped_or_failed_runs_without_nodes_are_left_out():
    assert failures([{"skipped": True}, {"failed": True, "msg": "boom"}, {"nodes": {"n": {"status": "passed"}}}]) == []
    assert failures([]) == [] and failures(None) == []
