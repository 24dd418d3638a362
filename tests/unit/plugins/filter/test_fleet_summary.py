"""The fleet filters: summary with the printable table, the Markdown report, the failure policy."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_failure import FilterModule as Failure
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_report_markdown import FilterModule as Markdown
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule

LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "T4", "nvidia.com/gpu.count": "1"}


def summary(alloc):
    flt = FilterModule().filters()["fleet_summary"]
    hosts = {"gpu-0": {"node_name": "gpu-0", "pool": "p", "nvidia_gpu": {"available": True, "gpu_count": 1}}}
    node = {"allocatable": {"nvidia.com/gpu": alloc}, "operands": {}, "labels": LABELS, "ready": True}
    return flt(hosts, {"gpu-0": node}, smoke={"gpu-0": {"status": "passed"}})


def test_the_filter_returns_rows_and_a_table():
    out = summary(1)
    assert out["passed"] == 1 and out["rows"][0]["checks"]["smoke"] == "pass"
    assert out["lines"][-1] == "1 passed, 0 failed"


def test_the_markdown_and_failure_filters_take_the_summary():
    out = summary(0)
    assert "### gpu-0: device-plugin" in Markdown().filters()["fleet_report_markdown"](out)
    failure = Failure().filters()["fleet_failure"]
    assert failure(out) == "1 GPU node(s) failed validation: gpu-0 at layer device-plugin"
    assert failure(out, "never") == ""
