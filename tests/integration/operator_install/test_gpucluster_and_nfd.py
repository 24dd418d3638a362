"""gpu_operator with what NVIDIA's chart v26.7.0 brings, on the real test bed as the least-privilege identity
(docs/rbac.yml): GPUCluster mode from scratch (the chart's render-time checks active, one of them on .Capabilities),
a value combination the chart refuses, NFD on through install and uninstall, and a rerun after a readiness failure.
"""

from __future__ import annotations

import pytest
from operator_install_helpers import NS, wait_for

from tests.sim.operator.logic import ANN_FAULT

CHART = "v26.7.0"
GPUCLUSTER = "gpu-cluster"
NFD_CLUSTER_RBAC = ("gpu-operator-node-feature-discovery", "gpu-operator-node-feature-discovery-gc")
NFD_PRUNE = "gpu-operator-node-feature-discovery-prune"


@pytest.fixture(params=["helm", "helm3"])
def helm(request, testbed):
    """Both helm majors: testbed.helm is v4, testbed.helm3 is v3."""
    return getattr(testbed, request.param)


def gpucluster(bed):
    from kubernetes.client.rest import ApiException

    try:
        return bed.custom.get_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", GPUCLUSTER)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def cluster_rbac(bed, names):
    """``{(kind, name)}`` of the ClusterRoles and ClusterRoleBindings among ``names`` that exist."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(bed.t.api_client())
    found = {("ClusterRole", r.metadata.name) for r in rbac.list_cluster_role().items}
    found |= {("ClusterRoleBinding", b.metadata.name) for b in rbac.list_cluster_role_binding().items}
    return {(kind, name) for kind, name in found if name in names}


def uninstall(bed, **args):
    result = bed.module(state="absent", **args)
    assert not result.get("failed"), result.get("msg")
    return result


def test_a_gpucluster_install_from_scratch_plans_without_a_write_then_installs_ready(bed):
    bed.clean_slate()
    mark = bed.mark()
    plan = bed.module(check=True, diff=True, chart_version=CHART, mode="gpucluster")
    assert not plan.get("failed"), plan.get("msg")
    assert plan["changed"] is True and plan["plan"]["action"] == "install" and plan["plan"]["mode"] == "gpucluster"
    # every value the chart requires for a GPUCluster while it deploys the driver, synthesised
    assert plan["values"]["clusterPolicy"] == {"deployCR": False} and plan["values"]["gpuCluster"] == {"deployCR": True}
    assert plan["values"]["driver"]["nvidiaDriverCRD"] == {"enabled": True}
    assert "kind: GPUCluster" in plan["diff"][1]["after"]  # rendered with the cluster's DeviceClass API
    assert bed.writes_since(mark) == [] and bed.release() is None

    installed = bed.install(CHART, mode="gpucluster")
    assert installed["plan"]["action"] == "install" and installed["release"]["status"] == "deployed"
    assert installed["readiness"]["kind"] == "GPUCluster" and installed["readiness"]["ready"] is True
    assert gpucluster(bed)["status"]["state"] == "ready"
    assert bed.custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"] == []

    again = bed.install(CHART)  # the installed release keeps its mode
    assert again["changed"] is False and again["plan"]["mode"] == "gpucluster" and again["readiness"]["ready"]
    uninstall(bed)
    wait_for(lambda: gpucluster(bed) is None, 60, what="the GPUCluster deleted with the release")


@pytest.mark.parametrize(
    "values, named",
    [
        ({"driver": {"nvidiaDriverCRD": {"enabled": False}}}, "set driver.nvidiaDriverCRD.enabled=true"),
        ({"clusterPolicy": {"deployCR": True}}, "set clusterPolicy.deployCR=false"),
    ],
    ids=["driver-without-nvidiadriver", "both-crs"],
)
def test_a_combination_the_chart_refuses_is_refused_before_any_write_naming_the_value(bed, values, named):
    bed.clean_slate()
    mark = bed.mark()
    for check in (True, False):
        result = bed.module(check=check, chart_version=CHART, mode="gpucluster", values=values)
        assert result["failed"] is True and result["refused"] is True
        assert "the chart refuses these values in GPUCluster mode" in result["msg"] and named in result["msg"]
    assert bed.writes_since(mark) == [] and bed.release() is None


def test_with_nfd_on_install_and_uninstall_pass_as_the_documented_identity(bed, helm):
    bed.clean_slate()
    installed = bed.install(CHART, helm=helm, values={"nfd": {"enabled": True}})
    assert installed["values"]["nfd"] == {"enabled": True} and installed["readiness"]["ready"] is True
    assert cluster_rbac(bed, NFD_CLUSTER_RBAC) == {
        (k, n) for k in ("ClusterRole", "ClusterRoleBinding") for n in NFD_CLUSTER_RBAC
    }

    gone = uninstall(bed, helm_binary=helm, remove_crds=True)
    assert gone["changed"] is True and bed.release() is None
    # the post-delete prune hook ran (as the identity created its ServiceAccount, ClusterRole and binding) and helm
    # deleted its objects once the Job succeeded, with everything the release held
    assert cluster_rbac(bed, NFD_CLUSTER_RBAC + (NFD_PRUNE,)) == set()
    service_accounts = {sa.metadata.name for sa in bed.core.list_namespaced_service_account(NS).items}
    assert not {n for n in service_accounts if "node-feature-discovery" in n}, service_accounts


def test_a_rerun_after_a_readiness_failure_checks_again_and_fails_naming_it(bed):
    bed.clean_slate()
    node = sorted(n.metadata.name for n in bed.core.list_node(label_selector="nvidia.com/gpu.present=true").items)[0]
    bed.core.patch_node(node, {"metadata": {"annotations": {ANN_FAULT: "driver-crash-kernel-headers"}}})
    try:
        first = bed.module(chart_version=CHART, ready_timeout=15)
        assert first["failed"] is True and first["changed"] is True
        assert (
            "the release is installed but ClusterPolicy is not ready after 15s" in first["msg"] and node in first["msg"]
        )

        mark = bed.mark()
        rerun = bed.module(chart_version=CHART, ready_timeout=5)
        assert rerun["failed"] is True and rerun["changed"] is False and rerun["plan"]["action"] == "none"
        assert "the release is unchanged but ClusterPolicy is not ready after 5s (state notReady)" in rerun["msg"]
        assert node in rerun["msg"] and "driver" in rerun["readiness"]["not_ready_operands"][node]
        assert bed.writes_since(mark) == []
    finally:
        bed.core.patch_node(node, {"metadata": {"annotations": {ANN_FAULT: None}}})
    healed = bed.install(CHART)
    assert healed["changed"] is False and healed["readiness"]["ready"] is True
    uninstall(bed, remove_crds=True)
