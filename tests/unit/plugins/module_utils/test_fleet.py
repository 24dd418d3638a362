"""Specs for the fleet summary: host facts joined with the cluster view, first failing layer per node."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._fleet import (
    fleet_summary,
    node_findings,
    summary_lines,
)


def nvml(count=8, available=True, health="ok", reason=None, gpus=None):
    return {
        "available": available,
        "gpu_count": count,
        "health": health,
        "reason": reason,
        "hint": "load the driver" if reason else None,
        "driver_version": "595.91.07",
        "gpus": gpus or [],
    }


def node(allocatable=8, operands=None, mig=None):
    alloc = {"nvidia.com/gpu": allocatable}
    alloc.update(mig or {})
    ready = {c: {"name": c + "-pod", "ready": True} for c in ("driver", "container-toolkit", "device-plugin")}
    ready.update(operands or {})
    return {"allocatable": alloc, "operands": ready, "gpu": {"product": "NVIDIA-H100-80GB-HBM3"}}


def host(facts, node_name="gpu-0"):
    return {"node_name": node_name, "pool": "h100", "nvidia_gpu": facts}


def layers(findings):
    return [f["layer"] for f in findings]


def test_a_healthy_node_whose_allocatable_matches_nvml_has_no_findings():
    assert node_findings(host(nvml()), node()) == []


def test_nvml_unavailable_is_a_driver_finding_with_the_hosts_hint():
    findings = node_findings(host(nvml(available=False, reason="driver_not_loaded", count=None)), node(0))
    assert findings[0]["layer"] == "driver"
    assert "driver_not_loaded" in findings[0]["evidence"]
    assert findings[0]["fix"] == "load the driver"


def test_a_host_without_a_node_is_reported_at_the_node_layer():
    assert layers(node_findings(host(nvml(), node_name="missing"), None)) == ["node"]


def test_operand_layers_are_reported_in_dependency_order():
    crashing = {"name": "drv", "ready": False, "waiting_reason": "CrashLoopBackOff", "restarts": 7}
    down = {"name": "tk", "ready": False, "phase": "Pending", "restarts": 0}
    findings = node_findings(host(nvml()), node(0, {"container-toolkit": down, "driver": crashing}))
    assert layers(findings) == ["driver", "toolkit", "device-plugin"]
    assert "CrashLoopBackOff" in findings[0]["evidence"] and "7 restarts" in findings[0]["evidence"]


def test_fewer_advertised_gpus_than_nvml_counts_is_a_device_plugin_finding():
    findings = node_findings(host(nvml(8)), node(7))
    assert layers(findings) == ["device-plugin"]
    assert "nvidia.com/gpu=7" in findings[0]["evidence"] and "8 GPUs" in findings[0]["evidence"]


def test_mig_resources_replace_the_whole_gpu_count_check():
    assert node_findings(host(nvml(8)), node(0, mig={"nvidia.com/mig-1g.10gb": 56})) == []


def test_critical_gpu_health_lists_every_reason_once():
    gpus = [
        {"health": {"reasons": ["row_remap_pending", "uncorrectable_ecc"]}},
        {"health": {"reasons": ["row_remap_pending"]}},
    ]
    findings = node_findings(host(nvml(health="critical", gpus=gpus)), node())
    assert layers(findings) == ["gpu-health"]
    assert findings[0]["evidence"] == "critical GPU health: row_remap_pending, uncorrectable_ecc"


def test_fleet_summary_counts_verdicts_and_names_the_first_failing_layer():
    hosts = {"b": host(nvml(), "gpu-1"), "a": host(nvml(), "gpu-0")}
    summary = fleet_summary(hosts, {"gpu-0": node(), "gpu-1": node(6)})
    assert [r["host"] for r in summary["rows"]] == ["a", "b"]
    assert (summary["passed"], summary["failed"]) == (1, 1)
    assert summary["rows"][1]["failing_layer"] == "device-plugin"
    assert summary_lines(summary)[-1] == "1 passed, 1 failed"
