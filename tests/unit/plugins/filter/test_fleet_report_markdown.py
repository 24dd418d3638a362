"""The fleet_report_markdown filter: a fleet validation summary as a Markdown report."""

from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_report_markdown import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.filter.fleet_summary import FilterModule as Summary

LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "T4", "nvidia.com/gpu.count": "1"}


def report(summary, **kw):
    return FilterModule().filters()["fleet_report_markdown"](summary, **kw)


def host(node_name, pool="p", available=True):
    facts = {"available": available, "gpu_count": 1, "reason": None if available else "driver_not_loaded"}
    return {"node_name": node_name, "pool": pool, "nvidia_gpu": facts}


def node(alloc=1, product="T4"):
    gpu = {"product": product} if product else {}
    return {"allocatable": {"nvidia.com/gpu": alloc}, "operands": {}, "labels": LABELS, "ready": True, "gpu": gpu}


def summary(hosts, nodes, **kw):
    return Summary().filters()["fleet_summary"](hosts, nodes, **kw)


def healthy():
    return summary({"a": host("gpu-0")}, {"gpu-0": node()})


def broken():
    """gpu-0 passes; gpu-1 advertises no GPU (device-plugin); gpu-2 has no driver (driver)."""
    hosts = {"a": host("gpu-0"), "b": host("gpu-1"), "c": host("gpu-2", available=False)}
    return summary(hosts, {"gpu-0": node(), "gpu-1": node(0), "gpu-2": node()})


def test_the_report_starts_with_the_title_and_the_totals():
    md = report(healthy())
    assert md.startswith("# GPU validation report\n\n**1 passed, 0 failed** of 1 GPU nodes.\n")


def test_a_title_and_a_generated_timestamp_are_printed_under_the_heading():
    md = report(healthy(), title="Nightly", generated="2026-12-03T15:00:00Z")
    assert md.startswith("# Nightly\n\nGenerated 2026-12-03T15:00:00Z.\n\n**1 passed")


def test_failing_layers_are_listed_lowest_first():
    assert "\nFailing layers: driver (1), device-plugin (1).\n" in report(broken())


def test_each_node_is_a_table_row_with_the_outcome_of_every_check():
    lines = report(broken()).splitlines()
    header = lines.index(
        "| node | pool | product | verdict | layer | host | node | upgrade | labels | allocatable | operands "
        "| dra-plugin | dra-slices | dra-devices | dra-taints | mig | smoke | monitoring |"
    )
    assert lines[header + 1] == "|---" * 18 + "|"
    assert lines[header + 2 : header + 5] == [
        "| gpu-0 | p | T4 | pass | - | ok | ok | ok | ok | ok | ok | - | - | - | - | - | - | - |",
        "| gpu-1 | p | T4 | **fail** | device-plugin | ok | ok | ok | ok | **FAIL** | ok | - | - | - | - | - | - | - |",
        "| gpu-2 | p | T4 | **fail** | driver | **FAIL** | ok | ok | ok | - | ok | - | - | - | - | - | - | - |",
    ]


def test_missing_values_read_as_a_dash_and_pipes_are_escaped():
    md = report(summary({"a": host("gpu-0", pool="a|b")}, {"gpu-0": node(product=None)}))
    assert "| gpu-0 | a\\|b | - | pass | - |" in md


def test_each_failing_node_lists_its_findings_with_evidence_and_fix():
    md = report(broken())
    assert (
        "\n## Failures\n\n### gpu-1: device-plugin\n\n- **device-plugin** (allocatable check): the node advertises "
        "nvidia.com/gpu=0 but NVML counts 1 GPUs. Fix: The device plugin does not register GPUs with the kubelet" in md
    )
    assert "### gpu-2: driver\n\n- **driver** (host check): NVML unavailable on the host: driver_not_loaded. " in md


def test_a_passing_fleet_has_no_failures_section():
    assert "## Failures" not in report(healthy())


def test_the_report_ends_with_the_checks_legend_and_one_newline():
    md = report(healthy())
    assert md.endswith("monitoring = DCGM metrics (Prometheus) or exporter endpoints present.\n")
    assert "\nChecks: host = NVML on the host sees the GPUs; node = " in md
    assert not md.endswith("\n\n")


def test_the_failures_are_grouped_by_owner_each_with_its_fix_and_command():
    md = report(broken())
    section = md[md.index("\n## Failures by owner\n") : md.index("\n## Failures\n")]
    assert section.splitlines()[3] == "### node-os-team (driver)"
    assert "- **gpu-2** at driver: NVML unavailable on the host: driver_not_loaded. Fix: " in section
    assert "Run: `ssh c nvidia-smi`" in section
    assert "\n### platform-team (device-plugin)\n\n- **gpu-1** at device-plugin: " in section


def test_a_passing_fleet_has_no_owners_section():
    assert "## Failures by owner" not in report(healthy())
