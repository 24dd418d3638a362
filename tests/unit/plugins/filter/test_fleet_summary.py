"""The fleet_summary filter adds the printable table to the summary."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule


def test_the_filter_returns_rows_and_a_table():
    flt = FilterModule().filters()["fleet_summary"]
    hosts = {"gpu-0": {"node_name": "gpu-0", "pool": "p", "nvidia_gpu": {"available": True, "gpu_count": 1}}}
    out = flt(hosts, {"gpu-0": {"allocatable": {"nvidia.com/gpu": 1}, "operands": {}}})
    assert out["passed"] == 1
    assert out["lines"][-1] == "1 passed, 0 failed"
