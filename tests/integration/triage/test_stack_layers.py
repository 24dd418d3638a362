"""gpu_triage_info names the broken layer of the GPU stack - driver, toolkit/validator, device plugin - from real
symptoms: the simulated operator's injected faults (sim.gpuops.io/fault) and the real kube-scheduler's events for
a GPU pod that can only go to the broken node. The module runs as the least-privilege identity."""

from __future__ import annotations

import pytest

from tests.integration.simop_helpers import wait_for

DRIVER_FAULTS = {
    # fault -> (text of the last termination message, the fix names)
    "driver-crash-kernel-headers": ("Could not resolve Linux kernel version", "precompiled"),
    "driver-crash-nouveau": ("nouveau", "Blacklist nouveau"),
    "driver-crash-secureboot": ("Key was rejected by service", "Secure Boot"),
}


@pytest.fixture
def broken(gpu_operator):
    """``broken(fault)`` puts a fault on the first H100 node and waits for its GPUs to be withdrawn; heals it after."""
    op = gpu_operator
    op.wait_healthy(timeout=90)
    node = sorted(n for n in op.gpu_nodes if n.startswith("h100"))[0]

    def inject(fault, withdrawn=True):
        op.fault(node, fault)
        if withdrawn:
            wait_for(lambda: op.alloc(node) == "0", 30, what="allocatable withdrawn on %s" % node)
        return node

    yield inject
    op.fault(node, None)
    op.wait_healthy(timeout=90)


def pinned_pod(kube, node):
    """A 1-GPU pod that only fits on ``node``, and the scheduler's FailedScheduling message for it."""
    ns = kube.namespace()
    kube.pod(ns, "train", gpus=1, nodeSelector={"kubernetes.io/hostname": node})
    message = kube.failed_scheduling(ns, "train", contains="Insufficient nvidia.com/gpu")
    return ns, message


def errors(result):
    return [(f["layer"], f["reason"]) for f in result["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("fault", sorted(DRIVER_FAULTS))
def test_a_crash_looping_driver_is_the_first_failing_layer_of_a_pending_pod(gpu_operator, broken, kube, triage, fault):
    node = broken(fault)
    op = gpu_operator
    wait_for(
        lambda: any(
            (cs.state.waiting and cs.state.waiting.reason == "CrashLoopBackOff")
            for p in op.pods(selector="app.kubernetes.io/component=nvidia-driver", node=node)
            for cs in p.status.container_statuses or []
        ),
        30,
        what="driver CrashLoopBackOff",
    )
    ns, _message = pinned_pod(kube, node)

    result = triage(pod="%s/train" % ns)

    assert result["first_failing_layer"] == "driver"
    crash = result["findings"][0]
    assert (crash["layer"], crash["reason"], crash["nodes"]) == ("driver", "DriverCrashLoop", [node])
    text, fix = DRIVER_FAULTS[fault]
    assert text in crash["evidence"]["last_termination"]["message"]
    assert crash["evidence"]["waiting_reason"] == "CrashLoopBackOff" and crash["evidence"]["restarts"] > 0
    assert fix.lower() in crash["fix"].lower()
    assert any("Back-off restarting failed container" in e["message"] for e in crash["evidence"]["events"])
    assert isinstance(crash["evidence"].get("log_tail"), list), crash["evidence"]  # pods/log readable with rbac.yml
    # the real scheduler's reason is reported too, tied back to the node that advertises nothing
    insufficient = next(f for f in result["findings"] if f["reason"] == "InsufficientGPU")
    assert insufficient["nodes"] == [node] and "advertise(s) 0" in insufficient["message"]
    assert result["pods"][0]["scheduler_event"]["reasons"][0]["resource"] == "nvidia.com/gpu"
    statuses = {entry["name"]: entry["status"] for entry in result["layers"]}
    # in layer order; the dra layer does not apply to a pod that asks for nvidia.com/gpu
    assert [statuses[layer] for layer in ("driver", "toolkit", "device-plugin", "dra", "scheduling")] == [
        "failed",
        "ok",
        "failed",
        "skipped",
        "failed",
    ]


def test_no_nvidia_runtime_is_the_toolkit_layer(broken, kube, triage):
    node = broken("toolkit-no-runtime")
    ns, _message = pinned_pod(kube, node)

    result = triage(pod="%s/train" % ns)

    assert result["first_failing_layer"] == "toolkit"
    runtime = result["findings"][0]
    assert runtime["reason"] == "RuntimeNotConfigured" and runtime["nodes"] == [node]
    assert any('no runtime for "nvidia" is configured' in m for m in runtime["evidence"]["sandbox_failures"])
    assert "CONTAINERD_CONFIG" in runtime["fix"]
    assert ("device-plugin", "DevicePluginNotReady") in errors(result)


def test_a_device_plugin_that_advertises_nothing(gpu_operator, broken, kube, triage):
    node = broken("device-plugin-not-advertising")
    ns, _message = pinned_pod(kube, node)

    result = triage(pod="%s/train" % ns)

    assert result["first_failing_layer"] == "device-plugin"
    assert errors(result)[0] == ("device-plugin", "DevicePluginNotAdvertising")
    plugin = result["findings"][0]
    assert plugin["evidence"]["device_plugin_ready"] is True
    assert plugin["evidence"]["gpu_count_label"] == gpu_operator.gpu_nodes[node].count
    assert plugin["evidence"]["allocatable"].get("nvidia.com/gpu", 0) == 0


def test_a_failing_validator_is_reported_at_the_layer_its_validation_names(gpu_operator, broken, triage):
    node = broken("validator-failing", withdrawn=False)
    op = gpu_operator
    wait_for(
        lambda: any(
            not p.status.container_statuses[0].ready for p in op.pods(app="nvidia-operator-validator", node=node)
        ),
        30,
        what="validator not ready",
    )

    result = triage(node=node)

    assert result["first_failing_layer"] == "driver"  # nvidia-smi fails in its driver-validation
    validator = result["findings"][0]
    assert validator["reason"] == "ValidatorFailing"
    assert "NVIDIA-SMI has failed" in validator["message"]
    assert result["target"] == {"kind": "node", "namespace": None, "name": node}
    assert result["nodes"][node]["operands"]["operator-validator"]["waiting_reason"] == "CrashLoopBackOff"


def test_an_xid_79_gpu_fails_its_node_at_gpu_health_with_the_node_event(gpu_operator, broken, triage):
    node = broken("xid79", withdrawn=False)
    count = gpu_operator.gpu_nodes[node].count
    wait_for(lambda: gpu_operator.alloc(node) == str(count - 1), 30, what="allocatable count - 1")

    result = triage(node=node)

    assert result["first_failing_layer"] == "gpu-health"  # as gpu_validate_report judges it
    (unhealthy,) = [f for f in result["findings"] if f["layer"] == "gpu-health"]
    assert (unhealthy["reason"], unhealthy["severity"]) == ("UnhealthyGPUs", "error")
    assert "capacity %d but allocatable %d" % (count, count - 1) in unhealthy["message"]
    wait_for(lambda: triage(node=node)["findings"][0]["evidence"]["events"], 30, what="Xid node event in evidence")
    event = triage(node=node)["findings"][0]["evidence"]["events"][-1]
    assert event["reason"] == "XidCriticalError" and "Xid=79" in event["message"]


def test_a_healthy_node_has_no_failing_layer_and_check_mode_writes_nothing(gpu_operator, testbed, triage):
    gpu_operator.wait_healthy(timeout=90)
    node = sorted(gpu_operator.gpu_nodes)[0]
    mark = testbed.audit_mark()

    result = triage(check=True, node=node)

    assert result["first_failing_layer"] is None
    assert [entry["status"] for entry in result["layers"]][:3] == ["ok", "ok", "ok"]
    assert testbed.audit_writes(mark) == []
