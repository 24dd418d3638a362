"""Specs for GPU node validation: host facts joined with the cluster view, checks in order, lowest failing layer."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.checks import (
    NodeEvidence,
    node_checks,
    node_findings,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.fleet import (
    FleetInputs,
    fleet_summary,
    product_of,
    should_fail,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.inputs import (
    endpoints_by_node,
    prometheus_by_node,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.mig import expected_mig_resources
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.registry import CHECKS, LAYERS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.validate.report import (
    summary_lines,
    summary_markdown,
)

LABELS = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
}


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


def node(allocatable=8, operands=None, mig=None, capacity=None, labels=None, ready=True, gpu=None):
    alloc = {"nvidia.com/gpu": allocatable}
    alloc.update(mig or {})
    ops = {c: {"name": c + "-pod", "ready": True} for c in ("driver", "container-toolkit", "device-plugin")}
    ops.update(operands or {})
    return {
        "allocatable": alloc,
        "capacity": {"nvidia.com/gpu": allocatable if capacity is None else capacity},
        "operands": ops,
        "labels": dict(LABELS, **(labels or {})),
        "ready": ready,
        "conditions": {"Ready": {"status": "True" if ready else "False", "reason": "KubeletNotReady", "message": "x"}},
        "gpu": gpu or {"product": "NVIDIA-H100-80GB-HBM3", "count": 8, "mig": {}},
        "deploy": {},
    }


def mig_node(config, state="success", strategy="single", alloc=None):
    gpu = {
        "product": "A100",
        "count": 8,
        "mig": {"capable": True, "config": config, "config_state": state, "strategy": strategy},
    }
    n = node(gpu=gpu)
    n["allocatable"] = alloc or {}
    return n


def host(facts, node_name="gpu-0"):
    return {"node_name": node_name, "pool": "h100", "nvidia_gpu": facts}


def layers(findings):
    return [f["layer"] for f in findings]


def test_layers_and_checks_are_in_dependency_and_issue_order():
    assert LAYERS == (
        "driver",
        "node",
        "toolkit",
        "device-plugin",
        "dra",
        "gpu-health",
        "mig",
        "scheduling",
        "workload",
        "monitoring",
    )
    assert [c for c, _d in CHECKS] == [
        "host",
        "node",
        "upgrade",
        "labels",
        "allocatable",
        "operands",
        "dra-plugin",
        "dra-slices",
        "dra-devices",
        "dra-taints",
        "mig",
        "smoke",
        "monitoring",
    ]


def test_a_healthy_node_whose_allocatable_matches_nvml_has_no_findings():
    exporter = {"dcgm-exporter": {"name": "e", "ready": True}}
    checks, findings = node_checks(
        host(nvml()),
        node(operands=exporter),
        NodeEvidence(smoke={"status": "passed"}, monitoring={"source": "endpoints", "service": True, "endpoint": True}),
    )
    assert findings == []
    assert set(checks.values()) == {"pass", "skipped"} and checks["smoke"] == checks["monitoring"] == "pass"
    assert checks["mig"] == "skipped"


def test_nvml_unavailable_is_a_driver_finding_with_the_hosts_hint():
    findings = node_findings(host(nvml(available=False, reason="driver_not_loaded", count=None)), node(0))
    assert findings[0]["layer"] == "driver"
    assert "driver_not_loaded" in findings[0]["evidence"]
    assert findings[0]["fix"] == "load the driver"


def test_a_host_without_a_node_is_reported_at_the_node_layer_and_later_checks_are_skipped():
    checks, findings = node_checks(host(nvml(), node_name="missing"), None)
    assert layers(findings) == ["node"]
    assert checks["labels"] == checks["smoke"] == "skipped"


def test_a_not_ready_node_is_a_node_finding():
    assert layers(node_findings(host(nvml()), node(ready=False))) == ["node"]


def test_missing_gpu_labels_are_named():
    findings = node_findings(host(nvml()), node(labels={"nvidia.com/gpu.product": ""}))
    assert layers(findings) == ["device-plugin"] and "nvidia.com/gpu.product" in findings[0]["evidence"]


def test_operand_layers_are_reported_and_the_lowest_layer_is_the_verdict():
    crashing = {
        "name": "drv",
        "ready": False,
        "waiting_reason": "CrashLoopBackOff",
        "restarts": 7,
        "last_termination_message": "Unable to find a match: kernel-headers-5.15.0",
    }
    down = {"name": "tk", "ready": False, "phase": "Pending", "restarts": 0}
    summary = fleet_summary({"h": host(nvml())}, {"gpu-0": node(0, {"container-toolkit": down, "driver": crashing})})
    row = summary["rows"][0]
    assert [f["layer"] for f in row["findings"]] == ["driver", "toolkit", "device-plugin"]
    assert row["failing_layer"] == "driver"
    assert "CrashLoopBackOff" in row["evidence"][0] and "kernel-headers" in row["evidence"][0]


def test_a_required_operand_the_node_is_labelled_for_but_does_not_run_is_named_at_its_layer():
    n = node(operands={})
    del n["operands"]["container-toolkit"]
    n["operands_missing"] = ["container-toolkit"]
    findings = node_findings(host(nvml()), n)
    assert layers(findings) == ["toolkit"]
    assert "nvidia.com/gpu.deploy.container-toolkit=true but no container-toolkit pod" in findings[0]["evidence"]


def test_operands_stuck_in_container_creating_name_the_toolkit_with_the_sandbox_event():
    stuck = {"name": "nvidia-device-plugin-daemonset-x", "ready": False, "waiting_reason": "ContainerCreating"}
    events = [
        {
            "involvedObject": {"kind": "Pod", "name": "nvidia-device-plugin-daemonset-x"},
            "message": 'no runtime for "nvidia" is configured',
        }
    ]
    summary = fleet_summary(
        {"h": host(nvml())}, {"gpu-0": node(0, {"device-plugin": stuck})}, FleetInputs(sandbox_events=events)
    )
    row = summary["rows"][0]
    assert row["failing_layer"] == "toolkit"
    assert 'no runtime for "nvidia"' in row["evidence"][0]


def test_a_sandbox_failure_the_runtime_explains_gets_the_runtimes_fix_not_the_missing_handlers():
    stuck = {"name": "nvidia-device-plugin-daemonset-x", "ready": False, "waiting_reason": "ContainerCreating"}
    why = "runc create failed: unable to start container process: failed to update /proc/self/oom_score_adj"
    (finding,) = node_findings(
        host(nvml()), node(operands={"device-plugin": stuck}), NodeEvidence(sandbox_events={stuck["name"]: why})
    )
    assert (finding["layer"], finding["code"]) == ("toolkit", "SandboxNotCreated") and why in finding["evidence"]
    assert "nvidia runtime handler" not in finding["fix"] and "container runtime's log" in finding["fix"]


def test_an_operand_whose_cdi_devices_do_not_resolve_is_the_toolkits_with_the_runtimes_message():
    why = (
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply "
        "required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: "
        "unresolvable CDI devices nvidia.com/gpu=all"
    )
    stuck = {"name": "nvidia-device-plugin-daemonset-x", "ready": False, "waiting_reason": "RunContainerError"}
    stuck_node = node(operands={"device-plugin": dict(stuck, waiting_message=why)})
    (cdi,) = [f for f in node_findings(host(nvml()), stuck_node) if f["code"] == "CDIDevicesUnresolvable"]
    assert cdi["layer"] == "toolkit" and "unresolvable CDI devices nvidia.com/gpu=all" in cdi["evidence"]
    assert "nvidia-ctk cdi generate" in cdi["fix"]
    assert fleet_summary({"h": host(nvml())}, {"gpu-0": stuck_node})["rows"][0]["failing_layer"] == "toolkit"
    restarting = dict(stuck, waiting_reason="CrashLoopBackOff", last_termination_message=why)  # StartError
    (cdi,) = [
        f
        for f in node_findings(host(nvml()), node(operands={"device-plugin": restarting}))
        if f["code"] == "CDIDevicesUnresolvable"
    ]
    assert why in cdi["evidence"]


def test_a_stopped_device_plugin_is_missing_although_the_kubelet_keeps_its_capacity_for_a_while():
    gone = node(allocatable=0, capacity=8, operands={"device-plugin": None})
    gone["operands"].pop("device-plugin")
    gone["deploy"] = {"device-plugin": "true"}
    (finding,) = node_findings(host(nvml()), gone)
    assert (finding["layer"], finding["code"]) == ("device-plugin", "DevicePluginMissing")
    assert "capacity 8 for a while, allocatable 0" in finding["evidence"]


def test_a_crash_looping_device_plugin_is_named_with_its_last_words():
    said = "E main.go:173] error starting plugins: ... nvml init failed: ERROR_LIBRARY_NOT_FOUND"
    looping = {"name": "p", "ready": False, "waiting_reason": "CrashLoopBackOff", "last_termination_message": said}
    (finding,) = node_findings(host(nvml()), node(allocatable=0, capacity=0, operands={"device-plugin": looping}))
    assert finding["code"] == "DevicePluginNotReady" and finding["evidence"].endswith(said)


def test_in_nri_plugin_mode_a_ready_toolkit_pod_proves_the_toolkit_layer_without_a_runtime_handler():
    summary = fleet_summary({"h": host(nvml())}, {"gpu-0": node()}, FleetInputs(nri_plugin=True))
    assert summary["toolkit_mode"] == "nri-plugin" and summary["rows"][0]["verdict"] == "pass"
    assert fleet_summary({"h": host(nvml())}, {"gpu-0": node()})["toolkit_mode"] == "runtime-handler"


def test_in_nri_plugin_mode_a_stuck_operand_sandbox_points_at_the_nri_plugin_not_a_runtime_handler():
    stuck = {"name": "nvidia-device-plugin-daemonset-x", "ready": False, "waiting_reason": "ContainerCreating"}
    (handler,) = node_findings(host(nvml()), node(operands={"device-plugin": stuck}))
    assert "nvidia runtime handler" in handler["fix"]
    _checks, (nri,) = node_checks(host(nvml()), node(operands={"device-plugin": stuck}), NodeEvidence(nri_plugin=True))
    assert (nri["check"], nri["layer"]) == ("operands", "toolkit")
    assert "NRI plugin" in nri["fix"] and "nri_enabled" in nri["fix"] and "nvidia runtime handler" not in nri["fix"]


def test_in_nri_plugin_mode_a_node_without_its_toolkit_pod_fails_at_the_toolkit_layer():
    n = node(operands={})
    del n["operands"]["container-toolkit"]
    n["operands_missing"] = ["container-toolkit"]
    _checks, findings = node_checks(host(nvml()), n, NodeEvidence(nri_plugin=True))
    assert layers(findings) == ["toolkit"]


def test_a_failing_validator_is_attributed_to_the_component_it_validates():
    validator = {
        "name": "nvidia-operator-validator-x",
        "ready": False,
        "waiting_reason": "CrashLoopBackOff",
        "last_termination_message": "driver-validation: failed to validate the driver",
    }
    findings = node_findings(host(nvml()), node(operands={"operator-validator": validator}))
    assert layers(findings) == ["driver"]


def test_fewer_advertised_gpus_than_nvml_counts_is_a_device_plugin_finding():
    findings = node_findings(host(nvml(8)), node(7))
    assert layers(findings) == ["device-plugin"]
    assert "nvidia.com/gpu=7" in findings[0]["evidence"] and "8 GPUs" in findings[0]["evidence"]


def test_allocatable_below_a_full_capacity_means_the_plugin_marked_gpus_unhealthy():
    findings = node_findings(host(nvml(8)), node(7, capacity=8))
    assert layers(findings) == ["gpu-health"] and "1 GPU(s) unhealthy" in findings[0]["evidence"]


def test_time_slicing_replicas_multiply_the_expected_count():
    gpu = {"product": "T4", "count": 1, "replicas": 4, "mig": {}}
    assert node_findings(host(nvml(1)), node(4, gpu=gpu)) == []


def test_critical_gpu_health_lists_every_reason_once():
    gpus = [
        {"health": {"reasons": ["row_remap_pending", "uncorrectable_ecc"]}},
        {"health": {"reasons": ["row_remap_pending"]}},
    ]
    findings = node_findings(host(nvml(health="critical", gpus=gpus)), node())
    assert layers(findings) == ["gpu-health"]
    assert findings[0]["evidence"] == "critical GPU health: row_remap_pending, uncorrectable_ecc"


def test_uniform_mig_configs_expect_instances_per_gpu_by_strategy():
    assert expected_mig_resources(mig_node("all-1g.10gb"), 8) == {"nvidia.com/gpu": 56}
    assert expected_mig_resources(mig_node("all-3g.40gb", strategy="mixed"), 8) == {"nvidia.com/mig-3g.40gb": 16}
    assert expected_mig_resources(mig_node("all-balanced", strategy="mixed"), 8) is None
    layout = {"all-balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}
    assert expected_mig_resources(mig_node("all-balanced", strategy="mixed"), 2, layout) == {
        "nvidia.com/mig-1g.10gb": 4,
        "nvidia.com/mig-2g.20gb": 2,
        "nvidia.com/mig-3g.40gb": 2,
    }


def test_a_mig_node_passes_when_its_layout_is_applied_and_advertised():
    n = mig_node("all-1g.10gb", alloc={"nvidia.com/gpu": 56})
    checks, findings = node_checks(host(nvml(8)), n)
    assert findings == [] and checks["mig"] == "pass" and checks["allocatable"] == "skipped"


def test_a_failed_mig_config_state_is_a_mig_finding():
    findings = node_findings(host(nvml(8)), mig_node("all-1g.10gb", state="failed", alloc={"nvidia.com/gpu": 8}))
    assert layers(findings) == ["mig"] and "mig.config.state=failed" in findings[0]["evidence"]


def test_mig_resources_that_do_not_match_the_layout_are_a_mig_finding():
    n = mig_node("all-3g.40gb", strategy="mixed", alloc={"nvidia.com/mig-3g.40gb": 8, "nvidia.com/gpu": 0})
    findings = node_findings(host(nvml(8)), n)
    assert layers(findings) == ["mig"]
    assert (
        "nvidia.com/mig-3g.40gb=16" in findings[0]["evidence"] and "nvidia.com/mig-3g.40gb=8" in findings[0]["evidence"]
    )


def test_a_pending_smoke_pod_is_a_scheduling_finding_quoting_the_scheduler():
    smoke = {"status": "pending", "pod": "p", "reason": "0/5 nodes are available: 1 Insufficient nvidia.com/gpu."}
    findings = node_findings(host(nvml()), node(), NodeEvidence(smoke=smoke))
    assert layers(findings) == ["scheduling"] and "Insufficient nvidia.com/gpu" in findings[0]["evidence"]


def test_a_failed_smoke_pod_is_a_workload_finding_with_the_last_log_line():
    smoke = {"status": "failed", "pod": "p", "reason": "exit code 1: Error", "logs": "start\nCUDA error: no device\n"}
    findings = node_findings(host(nvml()), node(), NodeEvidence(smoke=smoke))
    assert layers(findings) == ["workload"] and "CUDA error: no device" in findings[0]["evidence"]


def test_a_smoke_pod_whose_gpus_cannot_be_injected_is_a_toolkit_finding():
    why = "exit code 128: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=GPU-a1b2"
    findings = node_findings(host(nvml()), node(), NodeEvidence(smoke={"status": "failed", "pod": "p", "reason": why}))
    assert layers(findings) == ["toolkit"] and why in findings[0]["evidence"]
    assert findings[0]["code"] == "CDIDevicesUnresolvable"


def test_a_host_missing_from_the_smoke_results_fails_when_a_smoke_test_ran():
    summary = fleet_summary({"h": host(nvml())}, {"gpu-0": node()}, FleetInputs(smoke={}))
    assert summary["rows"][0]["failing_layer"] == "workload"


def test_prometheus_series_per_node_are_compared_with_the_gpu_count():
    series = [
        {"metric": {"Hostname": "gpu-0"}, "value": [0, "6"]},
        {"metric": {"Hostname": "gpu-1"}, "value": [0, "8"]},
    ]
    xid = [{"metric": {"Hostname": "gpu-1", "gpu": "0"}, "value": [0, "79"]}]
    per = prometheus_by_node(series, xid)
    assert per["gpu-0"]["series"] == 6 and per["gpu-1"]["xid"] == {"0": 79}
    hosts = {"a": host(nvml(), "gpu-0"), "b": host(nvml(), "gpu-1"), "c": host(nvml(), "gpu-2")}
    nodes = {"gpu-0": node(), "gpu-1": node(), "gpu-2": node()}
    rows = fleet_summary(hosts, nodes, FleetInputs(monitoring={"source": "prometheus", "series": series, "xid": xid}))[
        "rows"
    ]
    assert [r["failing_layer"] for r in rows] == ["monitoring", "gpu-health", "monitoring"]
    assert "6 of 8 GPUs" in rows[0]["evidence"][0] and "Xid 79" in rows[1]["evidence"][0]
    assert "0 of 8 GPUs" in rows[2]["evidence"][0]


def test_without_prometheus_the_exporter_pod_service_and_listed_endpoint_decide():
    slices = [
        {
            "endpoints": [
                {"nodeName": "gpu-0", "conditions": {"ready": True}},
                {"nodeName": "gpu-1", "conditions": {"ready": False}},
            ]
        }
    ]
    assert endpoints_by_node(slices)["gpu-0"] == {"source": "endpoints", "endpoint": True}
    exporter = {"dcgm-exporter": {"name": "nvidia-dcgm-exporter-x", "ready": True}}
    hosts = {h: host(nvml(), "gpu-%d" % i) for i, h in enumerate("abcd")}
    nodes = {
        "gpu-0": node(operands=exporter),
        "gpu-1": node(operands=exporter),
        "gpu-2": node(operands=exporter),
        "gpu-3": node(),
    }
    monitoring = {"source": "endpoints", "service": True, "endpoint_slices": slices}
    rows = fleet_summary(hosts, nodes, FleetInputs(monitoring=monitoring))["rows"]
    # gpu-2: Ready pod, endpoint not listed (the API never lists loopback/host addresses): passes
    assert [r["failing_layer"] for r in rows] == [None, "monitoring", None, "monitoring"]
    assert "endpoint of this node (pod nvidia-dcgm-exporter-x) is not ready" in rows[1]["evidence"][0]
    assert rows[3]["evidence"] == ["no nvidia-dcgm-exporter pod on this node"]
    # The Service without any EndpointSlice (the controller could not write one: every address was loopback) passes.
    monitoring = {"source": "endpoints", "service": True, "endpoint_slices": []}
    rows = fleet_summary(hosts, nodes, FleetInputs(monitoring=monitoring))["rows"]
    assert [r["failing_layer"] for r in rows] == [None, None, None, "monitoring"]
    rows = fleet_summary(
        hosts, nodes, FleetInputs(monitoring={"source": "endpoints", "service": False, "endpoint_slices": slices})
    )
    assert all("no nvidia-dcgm-exporter Service" in r["evidence"][0] for r in rows["rows"])


def test_fleet_summary_counts_verdicts_and_layers():
    hosts = {"b": host(nvml(), "gpu-1"), "a": host(nvml(), "gpu-0")}
    summary = fleet_summary(hosts, {"gpu-0": node(), "gpu-1": node(6)})
    assert [r["host"] for r in summary["rows"]] == ["a", "b"]
    assert (summary["passed"], summary["failed"]) == (1, 1)
    assert summary["failed_by_layer"] == {"device-plugin": 1}
    assert summary_lines(summary)[-1] == "1 passed, 1 failed"


def test_two_runs_over_an_unchanged_fleet_give_the_same_summary():
    """The report files are the verdict record: a smoke pod's name and duration differ each run."""
    hosts, nodes = {"a": host(nvml(), "gpu-0"), "b": host(nvml(), "gpu-1")}, {"gpu-0": node(), "gpu-1": node()}
    pending = "0/5 nodes are available: 1 Insufficient nvidia.com/gpu."
    runs = [
        fleet_summary(
            hosts,
            nodes,
            FleetInputs(
                smoke={
                    "gpu-0": {"status": "passed", "pod": "gpuops-smoke-%s-gpu-0" % run, "duration": took},
                    "gpu-1": {"status": "pending", "pod": "gpuops-smoke-%s-gpu-1" % run, "reason": pending},
                }
            ),
        )
        for run, took in (("1a2b", 4.2), ("9f8e", 5.7))
    ]
    assert runs[0] == runs[1]
    assert runs[0]["rows"][0]["smoke"] == {"status": "passed", "reason": None}
    assert runs[0]["rows"][1]["evidence"] == ["the smoke pod stayed Pending: " + pending]


def test_fail_on_decides_whether_the_play_fails():
    summary = fleet_summary(
        {"a": host(nvml(), "gpu-0"), "b": host(nvml(), "gpu-1")}, {"gpu-0": node(), "gpu-1": node(6)}
    )
    assert should_fail(summary, "any") == "1 GPU node(s) failed validation: gpu-1 at layer device-plugin"
    assert should_fail(summary, "never") is None
    assert should_fail(summary, "layers", ["monitoring"]) is None
    assert "gpu-1" in should_fail(summary, "layers", ["device-plugin"])


def test_the_markdown_report_has_a_row_per_node_and_the_evidence_of_each_failure():
    summary = fleet_summary(
        {"a": host(nvml(), "gpu-0"), "b": host(nvml(), "gpu-1")}, {"gpu-0": node(), "gpu-1": node(6)}
    )
    md = summary_markdown(summary, generated="2026-12-03T15:00:00Z")
    assert md.startswith("# GPU validation report\n")
    assert "**1 passed, 1 failed** of 2 GPU nodes." in md
    assert "| gpu-0 | h100 | NVIDIA-H100-80GB-HBM3 | pass | - |" in md
    assert "### gpu-1: device-plugin" in md and "nvidia.com/gpu=6 but NVML counts 8 GPUs" in md


def test_the_printed_table_keeps_its_columns_aligned_for_long_pool_names():
    hosts = {"a": host(nvml(), "gpu-0"), "b": {**host(nvml(), "gpu-long-node-name-1"), "pool": "a100-noruntime"}}
    lines = summary_lines(fleet_summary(hosts, {"gpu-0": node(), "gpu-long-node-name-1": node(6)}))
    header, *rows, total = lines
    starts = [header.index(col) for col in ("pool", "product", "verdict", "layer", "evidence")]
    for row in rows:
        assert all(row[s - 1] == " " for s in starts), row
    assert rows[1].split()[:2] == ["gpu-long-node-name-1", "a100-noruntime"]
    assert total == "1 passed, 1 failed"


def test_without_gpu_feature_discovery_the_product_comes_from_the_dra_devices_or_nvml():
    """GPUCluster mode runs no GFD: no nvidia.com/gpu.product label on its nodes."""
    labelled = {"gpu": {"product": "NVIDIA-H100-80GB-HBM3"}, "dra": {"products": {"NVIDIA H100": 8}}}
    dra_only = {"gpu": {"product": None}, "dra": {"products": {"NVIDIA B200": 8}}}
    host = {"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}]}
    assert product_of(labelled, host) == "NVIDIA-H100-80GB-HBM3"
    assert product_of(dra_only, host) == "NVIDIA B200"
    assert product_of({"gpu": {}, "dra": {"products": {}}}, host) == "NVIDIA A100-SXM4-40GB"
    assert product_of(None, {}) is None


def test_a_dra_only_node_counts_its_dra_devices_where_others_count_allocatable_gpus():
    rows = [
        {
            "node": "b200-0",
            "pool": "b200",
            "product": "NVIDIA B200",
            "nvml_gpus": 8,
            "mode": "dra",
            "allocatable": {},
            "dra_devices": 8,
            "verdict": "pass",
            "failing_layer": None,
            "evidence": [],
        },
    ]
    lines = summary_lines({"rows": rows, "passed": 1, "failed": 0})
    assert lines[1].split()[:5] == ["b200-0", "b200", "NVIDIA", "B200", "8"] and lines[1].split()[5] == "8"
