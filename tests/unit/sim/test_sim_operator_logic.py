"""Unit tests for the simulated GPU Operator's pure logic and the stand-in chart (no cluster)."""

from __future__ import annotations

import subprocess

import pytest

from tests.sim import chart
from tests.sim.chart import crds
from tests.sim.operator import dcgm
from tests.sim.operator import logic as L
from tests.sim.operator.controller import desired_daemonsets, requests_gpu


def node(name="g0", gpu=True, count=8, product="NVIDIA-H100-80GB-HBM3", mig=True, labels=None, ann=None):
    lab = {"feature.node.kubernetes.io/pci-10de.present": "true"} if gpu else {}
    lab.update(labels or {})
    a = (
        {
            L.ANN_PRODUCT: product,
            L.ANN_COUNT: str(count),
            L.ANN_MEMORY: "81559",
            L.ANN_MIG_CAPABLE: "true" if mig else "false",
        }
        if gpu
        else {}
    )
    a.update(ann or {})
    return {
        "metadata": {"name": name, "labels": lab, "annotations": a},
        "status": {"capacity": {}, "allocatable": {}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


ALL_READY = {"driver": True, "toolkit": True, "device-plugin": True}


# ------------------------------------------------------------------------------------- labels


def test_labels_on_gpu_node():
    want = L.desired_node_labels(node(), {}, "595.91.07")
    assert want["nvidia.com/gpu.present"] == "true"
    assert want["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert want["nvidia.com/gpu.count"] == "8" and want["nvidia.com/gpu.memory"] == "81559"
    assert want["nvidia.com/gpu.family"] == "hopper"
    assert want["nvidia.com/cuda.driver-version.major"] == "595"
    assert want["nvidia.com/cuda.driver-version.full"] == "595.91.07"
    assert want["nvidia.com/mig.capable"] == "true" and want["nvidia.com/mig.config"] == "all-disabled"
    assert want[L.DEPLOY + "mig-manager"] == "true"
    for comp in L.DEPLOY_COMPONENTS:
        assert want[L.DEPLOY + comp] == "true"


def test_labels_cpu_node_untouched():
    assert L.desired_node_labels(node(gpu=False), {}, None) == {}


@pytest.mark.parametrize("value", ["false", "pre-installed", "paused-for-driver-upgrade"])
def test_user_deploy_value_respected(value):
    want = L.desired_node_labels(node(labels={L.DEPLOY + "driver": value}), {}, None)
    assert L.DEPLOY + "driver" not in want


def test_operands_false_switches_deploy_labels_off():
    n = node(labels={L.DEPLOY + "operands": "false", L.DEPLOY + "driver": "true"})
    want = L.desired_node_labels(n, {}, None)
    assert want[L.DEPLOY + "driver"] == "false"
    assert L.DEPLOY + "device-plugin" not in want


def test_no_mig_manager_label_on_non_mig_node():
    want = L.desired_node_labels(node(mig=False, product="Tesla-T4", count=1), {}, None)
    assert L.DEPLOY + "mig-manager" not in want and want["nvidia.com/gpu.family"] == "turing"


def test_labels_diff_only():
    n = node()
    n["metadata"]["labels"].update(L.desired_node_labels(n, {}, "595.91.07"))
    assert L.desired_node_labels(n, {}, "595.91.07") == {}


# ------------------------------------------------------------------------------------- capacity


def test_capacity_only_when_plugin_ready():
    assert L.desired_gpu_resources(node(), ALL_READY, {}) == {"nvidia.com/gpu": (8, 8)}
    assert L.desired_gpu_resources(node(), {**ALL_READY, "device-plugin": None}, {}) == {"nvidia.com/gpu": (0, 0)}


@pytest.mark.parametrize(
    "fault",
    [
        "driver-crash-kernel-headers",
        "driver-crash-nouveau",
        "driver-crash-secureboot",
        "toolkit-no-runtime",
        "device-plugin-not-advertising",
    ],
)
def test_capacity_withdrawn_on_fault(fault):
    assert L.desired_gpu_resources(node(ann={L.ANN_FAULT: fault}), ALL_READY, {}) == {"nvidia.com/gpu": (0, 0)}


def test_xid79_drops_one():
    assert L.desired_gpu_resources(node(ann={L.ANN_FAULT: "xid79"}), ALL_READY, {}) == {"nvidia.com/gpu": (8, 7)}


def test_preinstalled_driver_needs_no_driver_pod():
    n = node(labels={L.DEPLOY + "driver": "pre-installed"})
    assert L.desired_gpu_resources(n, {"toolkit": True, "device-plugin": True}, {}) == {"nvidia.com/gpu": (8, 8)}


def test_mig_layouts():
    g = {"count": 8, "memory": 81920}
    assert L.mig_layout("all-disabled", g, "single") == {"nvidia.com/gpu": 8}
    assert L.mig_layout("all-1g.10gb", g, "single") == {"nvidia.com/gpu": 56}
    assert L.mig_layout("all-3g.40gb", g, "mixed") == {"nvidia.com/mig-3g.40gb": 16, "nvidia.com/gpu": 0}
    assert L.mig_layout("all-balanced", g, "single") is None
    assert L.mig_layout("bogus", g, "single") is None


def test_resource_patch_removes_stale_mig_resources():
    n = node()
    n["status"]["capacity"] = {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}
    n["status"]["allocatable"] = dict(n["status"]["capacity"])
    p = L.resource_patch(n, {"nvidia.com/gpu": (8, 8)})
    assert p == {
        "status": {
            "capacity": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": None},
            "allocatable": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": None},
        }
    }
    n["status"]["capacity"] = n["status"]["allocatable"] = {"nvidia.com/gpu": "8"}
    assert L.resource_patch(n, {"nvidia.com/gpu": (8, 8)}) is None


# ------------------------------------------------------------------------------------- status


def test_policy_state_reasons():
    assert L.policy_state(0, {})[1] == "NoGPUNodes"
    assert L.policy_state(2, {"nvidia-driver-daemonset": (2, 1, 2)})[1] == "DriverNotReady"
    st = L.policy_state(2, {"nvidia-driver-daemonset": (2, 2, 2), "nvidia-operator-validator": (2, 1, 2)})
    assert st[:2] == ("notReady", "OperandNotReady") and "nvidia-operator-validator" in st[2]
    assert L.policy_state(2, {"nvidia-driver-daemonset": (2, 2, 2)})[:2] == ("ready", "Reconciled")
    assert L.policy_state(2, {}, "couldn't find ServiceMonitor CRD")[1] == "ReconcileFailed"


def test_condition_transition_time_kept_when_unchanged():
    c1 = L.condition_set("ready", "Reconciled", "ok", "T1", None)
    c2 = L.condition_set("ready", "Reconciled", "ok", "T2", c1)
    assert [c["lastTransitionTime"] for c in c2] == ["T1", "T1"]
    c3 = L.condition_set("notReady", "DriverNotReady", "x", "T3", c2)
    assert [c["lastTransitionTime"] for c in c3] == ["T3", "T3"]


# ------------------------------------------------------------------------------------- upgrades
# (the upgrade states are NVIDIA's upgrade controller's: tests/sim/upgrade-controller, specs in
# tests/integration/operator/test_upgrade.py)


def test_the_driver_digest_covers_install_inputs_only():
    drv = {"env": [], "manager": {"version": "v0.12.0"}, "resources": {"limits": {"cpu": "1"}}}
    base = L.driver_digest("driver:580.1-ubuntu22.04", drv)
    assert L.driver_digest("driver:580.1-ubuntu22.04", dict(drv, resources={}, upgradePolicy={})) == base
    assert L.driver_digest("driver:610.1-ubuntu22.04", drv) != base
    assert L.driver_digest("driver:580.1-ubuntu22.04", dict(drv, manager={"version": "v0.13.0"})) != base
    assert L.restarts_in_place({"metadata": {"labels": {"helm.sh/chart": "gpu-operator-v26.7.0"}}})
    assert not L.restarts_in_place({"metadata": {"labels": {"helm.sh/chart": "gpu-operator-v26.3.3"}}})


def test_only_pods_of_daemonsets_selecting_the_client_label_are_gpu_clients():
    owner = [{"kind": "DaemonSet", "name": "agent"}]
    client = {"metadata": {"ownerReferences": owner}, "spec": {"nodeSelector": {L.CLIENT_LABEL: "true"}}}
    assert L.gpu_client(client)
    assert not L.gpu_client({"metadata": {}, "spec": {"nodeSelector": {L.CLIENT_LABEL: "true"}}})
    assert not L.gpu_client({"metadata": {"ownerReferences": owner}, "spec": {"nodeSelector": {"x": "y"}}})


# ------------------------------------------------------------------------------------- misc


def test_image_version_and_gpu_pods():
    assert L.image_version("nvcr.io/nvidia/driver:595.91.07-ubuntu22.04") == "595.91.07"
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]}}
    assert requests_gpu(pod) and not requests_gpu({"spec": {"containers": [{}]}})


def test_daemonsets_names_selectors_tolerations():
    cp = {"metadata": {"name": "cluster-policy", "uid": "u", "labels": {}}}
    tol = [{"key": "canary", "operator": "Exists", "effect": "NoSchedule"}]
    spec = {"daemonsets": {"tolerations": tol}, "driver": {"version": "595.91.07"}, "dcgmExporter": {"enabled": False}}
    dss = {d["metadata"]["name"]: d for d in desired_daemonsets(cp, spec, "gpu-operator", ["ubuntu22.04"], None)}
    assert set(dss) == {
        "nvidia-driver-daemonset",
        "nvidia-container-toolkit-daemonset",
        "nvidia-device-plugin-daemonset",
        "gpu-feature-discovery",
        "nvidia-operator-validator",
        "nvidia-mig-manager",
    }
    drv = dss["nvidia-driver-daemonset"]
    assert drv["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert drv["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert dss["nvidia-mig-manager"]["spec"]["template"]["spec"]["nodeSelector"] == {L.DEPLOY + "mig-manager": "true"}
    assert all(d["spec"]["template"]["spec"]["tolerations"] == tol for d in dss.values())
    # NVIDIA's upgrade controller lists the driver DaemonSets and their pods by the same label
    component = {"app.kubernetes.io/component": "nvidia-driver"}
    assert component.items() <= drv["metadata"]["labels"].items()
    assert component.items() <= drv["spec"]["template"]["metadata"]["labels"].items()


def test_dcgm_render_has_one_series_per_gpu():
    gpus = [
        {
            "hostname": "g0",
            "index": i,
            "product": "Tesla-T4",
            "memory": 15360,
            "driver": "595.91.07",
            "xid": 79 if i == 0 else 0,
        }
        for i in range(2)
    ]
    text = dcgm.render(gpus)
    util = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert len(util) == 2 and 'Hostname="g0"' in util[0] and 'UUID="GPU-' in util[0]
    assert any(line.startswith("DCGM_FI_DEV_XID_ERRORS{") and line.endswith(" 79") for line in text.splitlines())


# ------------------------------------------------------------------------------------- chart


def test_crd_fields_added_between_versions():
    def cp_sandbox(v):
        return crds.clusterpolicy_crd(v)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"
        ]["sandboxWorkloads"]["properties"]

    def nvd_spec(v):
        return crds.nvidiadriver_crd(v)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"
        ]

    assert "mode" not in cp_sandbox("v25.10.1") and "mode" in cp_sandbox("v26.3.3")
    assert "default" not in nvd_spec("v26.3.3") and "default" in nvd_spec("v26.7.0")
    assert "upgradePolicy" in nvd_spec("v26.7.0")
    for v in chart.VERSIONS:
        for doc in chart.crd_documents(v):
            if doc["spec"]["group"] != "nvidia.com":
                continue  # the 26.7 line's namespaced ComputeDomain CRDs (resource.nvidia.com)
            assert doc["spec"]["versions"][0]["subresources"] == {"status": {}}
            assert doc["spec"]["scope"] == "Cluster"


@pytest.mark.parametrize("version", chart.VERSIONS)
def test_chart_lints_and_renders(version, tmp_path):
    try:
        helm = chart.helm_binary()
    except RuntimeError:
        pytest.fail("helm is not built: run `make sim-binaries` (make units does)")
    src = chart.assemble(version, tmp_path)
    assert subprocess.run([helm, "lint", str(src)], capture_output=True, check=False).returncode == 0
    out = subprocess.run(
        [
            helm,
            "template",
            "gpu-operator",
            str(src),
            "-n",
            "gpu-operator",
            "--set",
            "driver.upgradePolicy.maxParallelUpgrades=null",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "kind: ClusterPolicy" in out and "name: gpu-operator-upgrade-crd" in out
    assert "maxParallelUpgrades: 0" in out  # the documented Helm null quirk
    assert "podDeletion:" in out and "gpuPodDeletion" not in out


def test_build_repo_indexes_every_version(tmp_path):
    chart.build_repo(tmp_path)
    import yaml

    idx = yaml.safe_load((tmp_path / "index.yaml").read_text())
    assert sorted(e["version"] for e in idx["entries"]["gpu-operator"]) == sorted(chart.VERSIONS)


def _upgrading_node(nm, state, skip=False):
    lab = {L.UPGRADE_STATE: state}
    if skip:
        lab[L.UPGRADE_SKIP] = "true"
    return {"metadata": {"name": nm, "labels": lab}}


def _cp(chart):
    return {"metadata": {"name": "cluster-policy", "labels": {"helm.sh/chart": chart}}}


READY = ("ready", "Reconciled", "ClusterPolicy is ready")


def test_from_26_7_the_cluster_policy_stays_not_ready_while_a_node_upgrades():
    nodes = [_upgrading_node("gpu-0", "upgrade-done"), _upgrading_node("gpu-1", "drain-required")]
    state, reason, msg = L.upgrade_aware_state(_cp("gpu-operator-v26.7.0"), READY, nodes)
    assert (state, reason) == ("notReady", "DriverUpgradeInProgress") and "gpu-1" in msg


def test_older_releases_report_ready_early_and_skip_labelled_nodes_never_count():
    nodes = [_upgrading_node("gpu-1", "drain-required")]
    assert L.upgrade_aware_state(_cp("gpu-operator-v26.3.3"), READY, nodes) == READY
    held = [_upgrading_node("gpu-1", "upgrade-required", skip=True), _upgrading_node("gpu-2", "upgrade-failed")]
    assert L.upgrade_aware_state(_cp("gpu-operator-v26.7.0"), READY, held) == READY


def test_a_driver_pod_is_gated_until_the_simulator_loads_it_or_kwok_has_started_it():
    pending = {"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}}
    loaded = {"status": {"phase": "Pending", "conditions": [{"type": L.DRIVER_GATE, "status": "True"}]}}
    assert L.driver_gated({}) and L.driver_gated(pending)
    assert not L.driver_gated(loaded) and not L.driver_gated({"status": {"phase": "Running"}})
