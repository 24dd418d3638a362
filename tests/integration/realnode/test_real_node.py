"""The collection against a real node (profile `real-node`, docs/testbed.md "The real node"): this machine as
`gpu-real-0` - kubelet, containerd, runc, NVIDIA's device plugin and the NVIDIA runtime with nvidia-ctk's CDI spec,
over the fake NVML. site.yml passes it on real evidence; each layer broken for real fails at that layer with the
component's own words; a pod the kubelet refuses is triaged; its host facts agree with containerd itself.

The module starts its own bed and stops it afterwards. The machine must be root (the node runs containerd): where
it is not, bring-up fails naming that, and so does every spec here - never a skip."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.integration.conftest import profile_bed
from tests.integration.helpers import collection_env, module_runner, wait_for
from tests.integration.site.test_site_playbook import run_site, verdicts
from tests.integration.validate.validate_helpers import Validate
from tests.sim import testbed
from tests.sim.realnode import machine, runtime
from tests.sim.realnode import node as real_node

NODE = "gpu-real-0"
NAMESPACE = "gpu-operator"
PLUGIN = "app=nvidia-device-plugin-daemonset"
HOST_CHECKS = ("host", "node", "upgrade", "labels", "allocatable", "operands", "smoke")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """(the bed, site.yml's process, its report's rows): the real-node bed after one run of site.yml. Its tear-down
    must leave the machine as it was: no claimed path, interface, network namespace, iptables chain or cgroup."""
    before = machine.snapshot()
    with profile_bed(tmp_path_factory.mktemp("real-node-bed"), "real-node") as (bed, inventory):
        reports = tmp_path_factory.mktemp("real-node-site")
        yield bed, run_site(inventory, reports), verdicts(reports)
    assert machine.snapshot() == before
    assert not [p for p in machine.CLAIMED if os.path.lexists(p)]


@pytest.fixture(scope="module")
def core(bed):
    from kubernetes import client

    return client.CoreV1Api(bed[0].api_client())


@pytest.fixture(scope="module")
def validate(bed, tmp_path_factory):
    """One validation run (NVML facts, then the role; no wait: each spec has waited for its fault) -> its row."""
    runner = Validate(bed[0], tmp_path_factory.mktemp("real-node-validate"))

    def run():
        _rc, report, out = runner.run(gpu_validate_wait_seconds=0, gpuops_smoke_expected_output="Test PASSED")
        assert report, out[-4000:]
        return Validate.rows(report)[NODE]

    return run


def plugin_pods(core):
    return core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN, field_selector=f"spec.nodeName={NODE}").items


def healthy(core):
    """One plugin pod, Ready, and all 8 GPUs allocatable: the state every spec starts from and leaves."""
    pods = plugin_pods(core)
    statuses = (pods[0].status.container_statuses or []) if len(pods) == 1 else []
    ready = statuses and not pods[0].metadata.deletion_timestamp and all(c.ready for c in statuses)
    return ready and core.read_node(NODE).status.allocatable.get("nvidia.com/gpu") == "8"


@pytest.fixture
def restored(core):
    yield
    wait_for(lambda: healthy(core), 180, 1, "the real node healthy again")


def first_error(row):
    return next((f.get("code"), f["evidence"]) for f in row["findings"] if f["layer"] == row["failing_layer"])


def test_site_yml_passes_the_real_node_on_real_evidence(bed, core):
    the_bed, site, rows = bed
    out = site.stdout + site.stderr
    assert site.returncode == 0, out[-5000:]
    assert "GPU validation: 1 passed, 0 failed of 1 GPU nodes" in out, out[-3000:]
    checks = rows[NODE]["checks"]
    assert {c: checks[c] for c in HOST_CHECKS} == dict.fromkeys(HOST_CHECKS, "pass"), checks
    assert checks["monitoring"] == "skipped"  # no DCGM exporter on the node: the inventory turns the check off
    node = core.read_node(NODE)
    assert node.status.node_info.container_runtime_version == "containerd://2.4.2+unknown"
    assert node.status.capacity["nvidia.com/gpu"] == "8"  # the kubelet's, from NVIDIA's plugin over NVML
    assert not core.list_namespaced_pod("default", label_selector="gpuops.io/smoke-test=true").items


def test_the_cluster_view_reads_the_real_nodes_gpus_and_its_device_plugin(bed, tmp_path):
    view = module_runner(bed[0], tmp_path, "gpu_cluster_info")(node_detail="all")["nodes"][NODE]
    assert view["mode"] == "extended-resource" and view["allocatable"]["nvidia.com/gpu"] in (8, "8"), view
    assert view["operands"]["device-plugin"]["ready"] and view["operands_ready"], view["operands"]
    assert view["gpu"]["product"] == "NVIDIA-H100-80GB-HBM3" and view["container_runtime_version"].startswith(
        "containerd://2.4.2"
    )


def test_a_smoke_pod_really_runs_with_the_gpus_the_nvidia_runtime_injected_and_is_cleaned_up(bed, core, tmp_path):
    run = module_runner(bed[0], tmp_path, "gpu_smoke_test")
    result = run(collect_logs=True, gpus=2, timeout=120)
    assert result["summary"]["all_passed"], result
    logs = result["nodes"][NODE]["logs"]
    # the plugin's NVIDIA_VISIBLE_DEVICES=<2 UUIDs> became two CDI devices: their files, the driver's NVML (the CDI
    # spec's own env then says void), and NVML in the container sees exactly those two
    assert "NVIDIA_VISIBLE_DEVICES=void" in logs and "/dev/nvidiactl" in logs, logs
    assert len(re.findall(r"/dev/nvidia[0-9]+\b", logs)) == 2, logs
    assert len(re.findall(r"^GPU [0-9]+: NVIDIA H100 80GB HBM3 \(UUID: GPU-", logs, re.M)) == 2, logs
    assert not core.list_namespaced_pod("default", label_selector="gpuops.io/smoke-test=true").items


def test_a_stopped_device_plugin_fails_at_the_device_plugin_layer(bed, core, validate, restored):
    taint = {"key": "gpuops.io/stop-device-plugin", "value": "true", "effect": "NoExecute"}
    core.patch_node(NODE, {"spec": {"taints": [taint]}})  # the DaemonSet does not tolerate it: its pod goes
    try:
        wait_for(lambda: not plugin_pods(core), 120, 1, "the device plugin pod gone")
        wait_for(lambda: core.read_node(NODE).status.allocatable.get("nvidia.com/gpu") == "0", 60, 1, "allocatable 0")
        row = validate()
    finally:
        core.patch_node(NODE, {"spec": {"taints": []}})
    assert row["failing_layer"] == "device-plugin", row
    code, evidence = first_error(row)
    assert code == "DevicePluginMissing" and "capacity 8 for a while, allocatable 0" in evidence, evidence


def test_the_nvidia_runtime_removed_from_containerds_config_fails_at_the_toolkit_layer(bed, core, validate, restored):
    drop_in = runtime.remove_nvidia_runtime()
    try:
        real_node.restart_containerd(bed[0].state_dir)
        for pod in plugin_pods(core):  # its next sandbox needs the nvidia runtime
            core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, grace_period_seconds=0)
        wait_for(lambda: sandbox_failure(core), 120, 1, "the plugin pod's FailedCreatePodSandBox event")
        row = validate()
    finally:
        runtime.CONTAINERD_DROP_IN.write_text(drop_in)
        real_node.restart_containerd(bed[0].state_dir)
        for pod in plugin_pods(core):
            core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, grace_period_seconds=0)
    assert row["failing_layer"] == "toolkit", row
    code, evidence = first_error(row)
    assert code == "RuntimeNotConfigured" and 'no runtime for "nvidia" is configured' in evidence, evidence


def sandbox_failure(core):
    events = core.list_namespaced_event(NAMESPACE, field_selector="reason=FailedCreatePodSandBox").items
    return [e.message for e in events if e.involved_object.name.startswith("nvidia-device-plugin")]


def test_the_cdi_spec_deleted_fails_at_the_toolkit_layer_with_the_runtimes_words(bed, core, validate, restored):
    spec = runtime.CDI_SPEC.read_text()
    runtime.CDI_SPEC.unlink()
    try:
        row = validate()
    finally:
        runtime.CDI_SPEC.write_text(spec)
    assert row["failing_layer"] == "toolkit", row["findings"]
    code, evidence = first_error(row)
    assert code == "CDIDevicesUnresolvable" and "unresolvable CDI devices nvidia.com/gpu=GPU-" in evidence, evidence


def test_nvml_failing_in_the_device_plugin_fails_at_the_device_plugin_layer_with_its_log(bed, core, validate, restored):
    from kubernetes import client

    custom = client.CustomObjectsApi(bed[0].api_client())

    def plugin_env(env):
        patch = {"spec": {"devicePlugin": {"env": env}}}
        custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy", patch)

    plugin_env([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])  # the runtime then injects no driver library
    try:
        wait_for(lambda: crash_looping(core), 180, 1, "the device plugin crash-looping")
        row = validate()
    finally:
        plugin_env([])
    assert row["failing_layer"] == "device-plugin", row["findings"]
    code, evidence = first_error(row)
    assert code == "DevicePluginNotReady" and "nvml init failed: ERROR_LIBRARY_NOT_FOUND" in evidence, evidence


def crash_looping(core):
    """The last words of the one plugin pod left (the rollout done), once it has failed to start."""
    pods = plugin_pods(core)
    if len(pods) != 1 or pods[0].metadata.deletion_timestamp:
        return []
    return [
        s.last_state.terminated.message
        for s in pods[0].status.container_statuses or []
        if s.last_state and s.last_state.terminated and "nvml init failed" in (s.last_state.terminated.message or "")
    ]


def test_a_pod_the_real_kubelet_refuses_is_triaged_with_the_kubelets_reason(bed, core, tmp_path):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "wants-nine-gpus"},
        "spec": {
            "nodeName": NODE,  # past the scheduler: the kubelet's admission decides
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                    "resources": {"limits": {"nvidia.com/gpu": "9"}},
                }
            ],
        },
    }
    core.create_namespaced_pod("default", pod)
    try:
        wait_for(lambda: core.read_namespaced_pod("wants-nine-gpus", "default").status.phase == "Failed", 60, 1)
        run = module_runner(bed[0], tmp_path, "gpu_triage_info")
        result = run(pod="wants-nine-gpus", namespace="default", kubeconfig=bed[0].kubeconfig)
    finally:
        core.delete_namespaced_pod("wants-nine-gpus", "default", grace_period_seconds=0)
    text = str(result["findings"])
    assert "UnexpectedAdmissionError" in text and "Requested: 9, Available: 8" in text, result["findings"]


def test_host_facts_of_this_machine_agree_with_containerd_itself(bed, tmp_path):
    adhoc = [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "gpuops.gpu_operator.gpu_host_facts"]
    proc = subprocess.run(
        [*adhoc, "-a", "host_root=/", "-e", f"ansible_python_interpreter={sys.executable}"],
        capture_output=True,
        text=True,
        env=collection_env(tmp_path),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    facts = json.loads(proc.stdout[proc.stdout.index("{") :])["ansible_facts"]["gpu_host"]["container_runtime"]
    binary = str(testbed.BIN_DIR / "containerd")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.split()[2]
    dump = tomllib.loads(
        subprocess.run(
            [binary, "--config", str(runtime.CONTAINERD_CONFIG), "config", "dump"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    cri = dump["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert (facts["name"], facts["version"]) == ("containerd", version.split("+")[0]), facts
    assert facts["socket"] == runtime.CONTAINERD_SOCKET and facts["socket_present"]
    assert [(f["path"], f["version"]) for f in facts["config_files"]] == [
        (str(runtime.CONTAINERD_CONFIG), 3),
        (str(runtime.CONTAINERD_DROP_IN), 3),  # containerd migrates both to its version in memory: the dump's
    ]
    assert dump["version"] >= 3 and facts["config"]["imports"] == dump["imports"]
    assert facts["config"]["default_runtime"] == cri["default_runtime_name"] == "nvidia"
    assert facts["config"]["runtimes"] == sorted(cri["runtimes"]) == ["nvidia", "runc"]
    assert facts["config"]["nvidia_runtime_binary"] == cri["runtimes"]["nvidia"]["options"]["BinaryName"]
