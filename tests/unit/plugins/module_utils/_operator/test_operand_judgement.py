"""Specs for the operand part of a node's judgement (_operator.operand_judgement): the driver pod with the cause it
names, the toolkit and the sandboxes it must let the runtime create, the validator at the layer its failing
validation names, every other operand at its component's layer."""

from __future__ import annotations

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import Context
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.operand_judgement import judge_operands


def pod(name, ready=True, waiting=None, restarts=0, reason=None, message=None, container=None):
    return {
        "name": name,
        "phase": "Running",
        "ready": ready,
        "restarts": restarts,
        "waiting_reason": waiting,
        "last_termination_reason": reason,
        "last_termination_container": container,
        "last_termination_message": message,
    }


def view(operands=None, missing=()):
    healthy = {c: pod(c + "-x") for c in ("driver", "container-toolkit", "device-plugin", "operator-validator")}
    return {"name": "g0", "operands": dict(healthy, **(operands or {})), "operands_missing": list(missing)}


def codes(found):
    return [(f["layer"], f["code"]) for f in found]


def test_healthy_operands_have_no_finding():
    assert judge_operands(view(), Context()) == []


def test_a_crash_looping_driver_names_its_cause_from_the_termination_message():
    driver = pod("drv", False, "CrashLoopBackOff", 4, "Error", "Could not resolve Linux kernel version")
    (found,) = judge_operands(view({"driver": driver}), Context(namespace="gpu-operator"))
    assert (found["layer"], found["code"]) == ("driver", "DriverCrashLoop")
    assert found["message"] == (
        "driver pod drv on node g0 is CrashLoopBackOff (4 restarts), last termination Error: kernel headers for the "
        'running kernel cannot be found - "Could not resolve Linux kernel version"'
    )
    assert "precompiled driver images" in found["fix"]


def test_an_image_that_cannot_be_pulled_is_named_as_such():
    (found,) = judge_operands(view({"driver": pod("drv", False, "ImagePullBackOff")}), Context())
    assert found["code"] == "DriverImagePull" and "cannot be pulled" in found["message"]


def test_a_node_labelled_for_the_driver_without_its_pod():
    operands = view()["operands"]
    del operands["driver"]
    (found,) = judge_operands(dict(view(), operands=operands, operands_missing=["driver"]), Context())
    assert codes([found]) == [("driver", "DriverPodMissing")]


def test_operand_sandboxes_without_the_nvidia_runtime_are_the_toolkit_layer_once():
    creating = {c: pod(c + "-x", False, "ContainerCreating") for c in ("device-plugin", "gpu-feature-discovery")}
    message = 'failed to get sandbox runtime: no runtime for "nvidia" is configured'
    context = Context(sandbox_failures={"gpu-feature-discovery-x": message})
    (found,) = judge_operands(view(creating), context)
    assert codes([found]) == [("toolkit", "RuntimeNotConfigured")]
    assert found["message"].endswith('(gpu-feature-discovery-x): ' + message)
    assert "RuntimeClass nvidia" in found["fix"]


def test_in_nri_plugin_mode_the_fix_names_the_toolkits_nri_plugin():
    creating = {"gpu-feature-discovery": pod("gfd", False, "ContainerCreating")}
    (found,) = judge_operands(view(creating), Context(nri_plugin=True))
    assert found["code"] == "SandboxNotCreated" and "NRI plugin" in found["fix"]


def test_a_sandbox_failure_under_a_broken_driver_is_the_drivers():
    operands = {
        "driver": pod("drv", False, "CrashLoopBackOff", 2, "Error", "nouveau"),
        "gpu-feature-discovery": pod("gfd", False, "ContainerCreating"),
    }
    found = judge_operands(view(operands), Context())
    assert codes(found) == [("driver", "DriverCrashLoop"), ("device-plugin", "OperandNotReady")]


def test_the_validator_fails_at_the_layer_its_failing_validation_names():
    validator = pod("val", False, "Init:CrashLoopBackOff", 3, "Error", "CUDA failure", "cuda-validation")
    (found,) = judge_operands(view({"operator-validator": validator}), Context())
    assert codes([found]) == [("workload", "ValidatorFailing")]
    assert found["message"].startswith("operator validator pod val is not ready (Init:CrashLoopBackOff, 3 restarts)")


def test_other_operands_fail_at_their_components_layer_and_missing_ones_are_named():
    operands = {"dcgm-exporter": pod("exp", False, "CrashLoopBackOff"), "mig-manager": pod("mig", False, "Error")}
    found = judge_operands(view(operands, missing=["gpu-feature-discovery"]), Context())
    assert codes(found) == [
        ("monitoring", "OperandNotReady"),
        ("mig", "OperandNotReady"),
        ("device-plugin", "OperandMissing"),
    ]


def test_the_device_plugin_and_the_dra_plugin_are_left_to_the_layers_they_serve():
    operands = {"device-plugin": pod("dp", False, "CrashLoopBackOff"), "dra-driver": pod("dra", False, "Error")}
    assert judge_operands(view(operands, missing=["device-plugin"]), Context()) == []
