"""Specification of the operator's install modes (plugins/module_utils/_operator/release/modes.py) and of the
life cycle in GPUCluster mode: the values that select a mode, the gate before a GPUCluster install (new installs only,
no ClusterPolicy, Kubernetes >= 1.34.2, host drivers >= 580) and the readiness wait on the GPUCluster. Helm and the
API server are the in-memory stand-ins of test_operator_release.py."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release import ReleaseError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release.modes import (
    mode_gate,
    mode_values,
    release_mode,
)
from tests.unit.plugins.module_utils._operator.test_operator_release import (
    CHARTS,
    FakeHelm,
    FakeKube,
    gpu_node,
    policy,
    run,
    writes,
)

GPUCLUSTER_CHART = "v26.7.0"
DRA_DEFAULTS = {
    "clusterPolicy": {"deployCR": True},
    "gpuCluster": {"deployCR": False},
    "draDriver": {"version": "v0.5.0"},
    "driver": {"nvidiaDriverCRD": {"enabled": False}},
}


class DraKube(FakeKube):
    """FakeKube with a server version, and the GPUCluster (``gpuclusters``) as the operator reports it."""

    def __init__(self, log, git_version="v1.36.3", policies=(), gpuclusters=()):
        super().__init__(log, nodes=[gpu_node()])
        self.git_version = git_version
        self.cluster_policies = list(policies)
        self.gpuclusters = list(gpuclusters)

    def list_custom(self, group, version, plural, **kw):
        found = {"clusterpolicies": self.cluster_policies, "gpuclusters": self.gpuclusters}.get(plural, [])
        return copy.deepcopy(found)


@pytest.fixture
def dra_bed(tmp_path, monkeypatch):
    """The stand-ins with a chart v26.7.0 that ships GPUCluster mode and a cluster without a ClusterPolicy."""
    log = []
    helm = FakeHelm(log)
    helm.tmpdir = str(tmp_path)
    monkeypatch.setitem(CHARTS, GPUCLUSTER_CHART, dict(CHARTS[GPUCLUSTER_CHART], values=DRA_DEFAULTS))
    return log, helm, DraKube(log)


def helm_values(helm):
    return helm.history_list[-1]["values"]


FLEET = {"values": {"driver": {"enabled": False}}, "driver_versions": {"gpu-0": "580.159.04"}}


# -- the values of each mode ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, mode",
    [
        ({}, "clusterpolicy"),
        ({"driver": {"nvidiaDriverCRD": {"enabled": True}}}, "nvidiadriver"),
        ({"clusterPolicy": {"deployCR": False}, "gpuCluster": {"deployCR": True}}, "gpucluster"),
    ],
)
def test_the_chart_values_select_one_mode(values, mode):
    assert release_mode(values) == mode


def test_a_mode_sets_only_the_values_whose_chart_default_differs():
    assert mode_values("gpucluster", DRA_DEFAULTS, "v26.7.0") == {
        "clusterPolicy.deployCR": False,
        "gpuCluster.deployCR": True,
        "driver.nvidiaDriverCRD.enabled": True,
    }
    # with host-installed drivers only (driver.enabled=false) the chart needs no NVIDIADriver objects
    assert mode_values("gpucluster", DRA_DEFAULTS, "v26.7.0", driver_enabled=False) == {
        "clusterPolicy.deployCR": False,
        "gpuCluster.deployCR": True,
    }
    assert mode_values("nvidiadriver", DRA_DEFAULTS, "v26.7.0") == {"driver.nvidiaDriverCRD.enabled": True}
    assert mode_values("clusterpolicy", DRA_DEFAULTS, "v26.7.0") == {}
    # a chart from before GPUCluster mode gets no gpuCluster or clusterPolicy keys
    assert mode_values("nvidiadriver", {"driver": {}}, "v26.3.3") == {"driver.nvidiaDriverCRD.enabled": True}


def test_a_chart_without_gpucluster_mode_is_refused_naming_the_version_to_use():
    with pytest.raises(ReleaseError, match="chart v26.3.3 has no gpuCluster and draDriver values.*v26.7.0 or later"):
        mode_values("gpucluster", {"driver": {}}, "v26.3.3")


# -- the gate ----------------------------------------------------------------------------------------------------


def test_a_new_gpucluster_install_on_a_fit_cluster_passes_the_gate():
    assert mode_gate("gpucluster", None, "v1.34.2", [], {"gpu-0": "580.65.06", "gpu-1": "595.91.07"}) == ([], [])


def test_the_gate_names_every_reason_a_cluster_cannot_take_gpucluster_mode():
    refusals, _warnings = mode_gate(
        "gpucluster", None, "v1.33.5", [{"metadata": {"name": "cluster-policy"}}], {"gpu-0": "570.172.08"}
    )
    assert len(refusals) == 3
    assert "ClusterPolicy cluster-policy exists" in refusals[0] and "kubectl delete clusterpolicy" in refusals[0]
    assert "Kubernetes 1.34.2 or later" in refusals[1] and "v1.33.5" in refusals[1]
    assert "gpu-0 (570.172.08)" in refusals[2]


def test_a_host_without_a_known_driver_version_is_a_warning_not_a_refusal():
    refusals, warnings = mode_gate("gpucluster", None, "v1.36.3", [], {"gpu-0": None})
    assert refusals == [] and "no driver version is known for gpu-0" in warnings[0]


@pytest.mark.parametrize("deployed, wanted", [("clusterpolicy", "gpucluster"), ("gpucluster", "clusterpolicy")])
def test_an_installed_release_never_moves_between_clusterpolicy_and_gpucluster(deployed, wanted):
    refusals, _warnings = mode_gate(wanted, deployed, "v1.36.3", [], {})
    assert "does not migrate" in refusals[0] and "keep mode %s" % deployed in refusals[0]


def test_clusterpolicy_and_nvidiadriver_modes_pass_the_gate_on_any_cluster():
    assert mode_gate("nvidiadriver", "clusterpolicy", "v1.30.0", [{"metadata": {"name": "cp"}}], {}) == ([], [])


# -- the life cycle ----------------------------------------------------------------------------------------------


def test_a_new_install_in_gpucluster_mode_renders_the_gpucluster_and_no_clusterpolicy(dra_bed):
    _log, helm, _kube = dra_bed
    result = run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    assert result["plan"]["action"] == "install" and result["plan"]["mode"] == "gpucluster"
    assert helm_values(helm)["clusterPolicy"] == {"deployCR": False}
    assert helm_values(helm)["gpuCluster"] == {"deployCR": True}


def test_a_gpucluster_release_keeps_its_mode_without_asking_and_a_second_run_writes_nothing(dra_bed):
    log, _helm, _kube = dra_bed
    run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    before = len(writes(log))
    again = run(dra_bed, chart_version=GPUCLUSTER_CHART, fleet=FLEET)
    assert again["plan"]["mode"] == "gpucluster" and again["changed"] is False
    assert len(writes(log)) == before


def test_gpucluster_mode_on_a_cluster_with_a_clusterpolicy_is_refused_before_any_write(dra_bed):
    log, _helm, kube = dra_bed
    kube.cluster_policies = [policy()]
    with pytest.raises(ReleaseError, match="mode gpucluster refused: ClusterPolicy cluster-policy exists") as err:
        run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    assert err.value.details["refused"] is True and writes(log) == []


def test_gpucluster_mode_on_an_old_control_plane_or_old_drivers_is_refused_in_check_mode_too(dra_bed):
    log, _helm, kube = dra_bed
    kube.git_version = "v1.34.1"
    fleet = dict(FLEET, driver_versions={"gpu-0": "575.57.08"})
    with pytest.raises(ReleaseError, match="1.34.2 or later.*v1.34.1.*gpu-0 \\(575.57.08\\)"):
        run(dra_bed, check_mode=True, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=fleet)
    assert writes(log) == []


def test_values_that_select_another_mode_than_the_one_asked_are_refused(dra_bed):
    log, _helm, _kube = dra_bed
    values = {"gpuCluster": {"deployCR": False}}
    with pytest.raises(ReleaseError, match="your values select mode clusterpolicy but mode is gpucluster"):
        run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET, values=values)
    assert writes(log) == []


def test_an_installed_clusterpolicy_release_is_not_switched_to_gpucluster(dra_bed):
    log, _helm, kube = dra_bed
    run(dra_bed, chart_version=GPUCLUSTER_CHART, fleet=FLEET)
    kube.cluster_policies = [policy()]
    before = len(writes(log))
    with pytest.raises(ReleaseError, match="runs in clusterpolicy mode and the operator does not migrate"):
        run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    assert len(writes(log)) == before


def test_the_readiness_wait_in_gpucluster_mode_reads_the_gpucluster(dra_bed):
    _log, _helm, kube = dra_bed
    gpucluster = policy()
    gpucluster["metadata"]["name"] = "gpu-cluster"
    kube.gpuclusters = [gpucluster]
    result = run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET, ready_timeout=30)
    assert result["readiness"]["kind"] == "GPUCluster" and result["readiness"]["ready"] is True


def test_a_gpucluster_that_is_not_ready_fails_the_run_naming_the_gpucluster(dra_bed):
    _log, _helm, kube = dra_bed
    kube.gpuclusters = [policy(state="notReady")]
    with pytest.raises(ReleaseError, match="the release is installed but GPUCluster is not ready after 30s"):
        run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET, ready_timeout=30)


def test_a_rerun_at_the_target_checks_readiness_again_and_fails_with_the_same_reason(dra_bed):
    log, _helm, kube = dra_bed
    kube.gpuclusters = [policy(state="notReady")]
    args = dict(chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET, ready_timeout=30)
    with pytest.raises(ReleaseError) as first:
        run(dra_bed, **args)
    written = len(writes(log))
    with pytest.raises(ReleaseError, match="the release is unchanged but GPUCluster is not ready after 30s") as again:
        run(dra_bed, **args)
    assert again.value.msg.split(" but ", 1)[1] == first.value.msg.split(" but ", 1)[1]
    assert again.value.details["plan"]["action"] == "none" and len(writes(log)) == written


def test_gpucluster_mode_with_the_operators_driver_turns_the_nvidiadriver_crd_on(dra_bed):
    _log, helm, _kube = dra_bed
    run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet={"values": {"driver": {"enabled": True}}})
    assert helm_values(helm)["driver"] == {"enabled": True, "nvidiaDriverCRD": {"enabled": True}}


@pytest.mark.parametrize(
    "values, named",
    [
        ({"clusterPolicy": {"deployCR": True}}, "set clusterPolicy.deployCR=false"),
        (
            {"driver": {"enabled": True, "nvidiaDriverCRD": {"enabled": False}}},
            "set driver.nvidiaDriverCRD.enabled=true",
        ),
    ],
    ids=["both CRs", "driver without NVIDIADriver"],
)
def test_values_the_chart_refuses_in_gpucluster_mode_are_refused_before_any_write_naming_the_value(
    dra_bed, values, named
):
    log, helm, _kube = dra_bed
    with pytest.raises(ReleaseError, match="the chart refuses these values in GPUCluster mode") as err:
        run(dra_bed, check_mode=True, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET, values=values)
    assert named in err.value.msg and err.value.details["refused"] is True
    assert writes(log) == [] and not hasattr(helm, "capabilities")


def test_gpucluster_mode_where_no_device_class_api_is_served_is_refused_naming_the_api(dra_bed):
    log, _helm, kube = dra_bed
    kube.served = [s for s in kube.served if s[0] != "resource.k8s.io"]
    with pytest.raises(ReleaseError, match="serves no resource.k8s.io DeviceClass"):
        run(dra_bed, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    assert writes(log) == []


def test_the_chart_renders_with_the_api_versions_and_kubernetes_version_the_cluster_serves(dra_bed):
    _log, helm, _kube = dra_bed
    run(dra_bed, check_mode=True, chart_version=GPUCLUSTER_CHART, mode="gpucluster", fleet=FLEET)
    api_versions, kube_version = helm.capabilities
    assert {"resource.k8s.io/v1", "resource.k8s.io/v1/DeviceClass", "v1/Node", "apps/v1/Deployment"} <= set(
        api_versions
    )
    assert kube_version == "v1.36.3"
