"""Names found, not assumed: an operator installed the OpenShift way - its ClusterPolicy `gpu-cluster-policy` in
namespace `nvidia-gpu-operator` - is found by gpu_cluster_info and the gpu_validate role with no operator namespace
and no ClusterPolicy name given.

The stand-in chart is installed in nvidia-gpu-operator without its own ClusterPolicy (clusterPolicy.deployCR=false),
and the renamed ClusterPolicy is created from the chart's template the way OLM creates it from the CSV's
alm-examples. The simulated operator learns its namespace from the meta.helm.sh/release-namespace annotation (the real
one from its own pod). As docs/rbac.yml says for another release namespace, its namespaced Role and RoleBinding are
created there too. Everything is removed afterwards, so later specs install the default operator afresh.
"""

from __future__ import annotations

import os

import pytest
import yaml
from validate_helpers import Validate

from tests.integration.helpers import module_runner
from tests.integration.simop_helpers import CP_PLURAL, CP_VER, GROUP, REPO_ROOT, Op, simulated_operator
from tests.sim import profiles
from tests.sim import testbed as tb

NAMESPACE, POLICY, VERSION = "nvidia-gpu-operator", "gpu-cluster-policy", "v26.7.0"


class RenamedOp(Op):
    """The :class:`Op` of the OpenShift-style install (its ClusterPolicy read by its own name)."""

    def cp(self):
        return self.custom.get_cluster_custom_object(GROUP, CP_VER, CP_PLURAL, POLICY)

    def helm_in(self, *args, **kwargs):
        return self.helm(*args, "-n", NAMESPACE, **kwargs)


def _grant_the_namespaced_role(api):
    """docs/rbac.yml's Role and RoleBinding of the release namespace, in NAMESPACE."""
    from kubernetes import utils

    for doc in yaml.safe_load_all((REPO_ROOT / "docs" / "rbac.yml").read_text()):
        if doc and doc["kind"] in ("Role", "RoleBinding") and doc["metadata"]["name"].startswith("gpuops-automation"):
            doc["metadata"]["namespace"] = NAMESPACE
            utils.create_from_dict(api, doc)


def _renamed_policy(op):
    rendered = op.helm_in(
        "template", "gpu-operator", "gpu-operator", "--repo", op.bed.chart_repo_url, "--version", VERSION
    )
    policy = next(d for d in yaml.safe_load_all(rendered.stdout) if d and d.get("kind") == "ClusterPolicy")
    policy["metadata"] = {"name": POLICY, "annotations": {"meta.helm.sh/release-namespace": NAMESPACE}}
    return policy


@pytest.fixture(scope="module")
def renamed(testbed, tmp_path_factory):
    """The OpenShift-style install on the session test bed, healthy; removed afterwards."""
    from kubernetes import client

    api = testbed.api_client()
    st = tb.State(testbed.state_dir).load()
    prof = profiles.load(st.data.get("profile_source") or testbed.profile)
    work = tmp_path_factory.mktemp("renamed")
    env = dict(
        os.environ, HELM_CACHE_HOME=str(work / "hc"), HELM_CONFIG_HOME=str(work / "hf"), HELM_DATA_HOME=str(work / "hd")
    )
    with simulated_operator(st, testbed.kubeconfig, work) as state_dir:
        op = RenamedOp(testbed, api, prof, env, state_dir)
        op.helm("uninstall", "gpu-operator", "-n", "gpu-operator", "--wait", check=False)  # the default install
        try:
            op.helm_in(
                "upgrade", "--install", "gpu-operator", "gpu-operator", "--repo", testbed.chart_repo_url,
                "--version", VERSION, "--create-namespace", "--wait", "--timeout", "600s",
                "--set", "clusterPolicy.deployCR=false", timeout=660,
            )  # fmt: skip
            _grant_the_namespaced_role(api)
            op.custom.create_cluster_custom_object(GROUP, CP_VER, CP_PLURAL, _renamed_policy(op))
            op.wait_healthy(timeout=180)
            yield op
        finally:
            try:
                op.custom.delete_cluster_custom_object(GROUP, CP_VER, CP_PLURAL, POLICY)
            except client.ApiException:
                pass
            op.helm_in("uninstall", "gpu-operator", "--wait", check=False)
            op.core.delete_namespace(NAMESPACE)  # with the operands the simulated operator made there


FOUND = {"namespace": NAMESPACE, "namespace_source": "cluster_policy", "cluster_policy": POLICY, "problems": []}


def test_gpu_cluster_info_finds_the_renamed_clusterpolicy_and_its_namespace(renamed, testbed, tmp_path_factory):
    result = module_runner(testbed, tmp_path_factory.mktemp("renamed-info"), "gpu_cluster_info")(node_detail="all")
    assert not result.get("failed"), result.get("msg")
    assert {k: result["operator"][k] for k in FOUND} == FOUND
    assert result["cluster_policy"]["name"] == POLICY and result["cluster_policy"]["ready"] is True
    assert result["totals"]["nodes_operands_ready"] == result["totals"]["nodes"] == len(renamed.gpu_nodes)


def test_a_cluster_policy_name_that_matches_nothing_fails_naming_the_option(renamed, testbed, tmp_path_factory):
    run = module_runner(testbed, tmp_path_factory.mktemp("renamed-miss"), "gpu_cluster_info")
    result = run(cluster_policy="cluster-policy")
    assert result.get("failed") and "cluster_policy cluster-policy matches no ClusterPolicy" in result["msg"]
    assert "found: %s" % POLICY in result["msg"]


def test_the_gpu_validate_role_passes_every_node_with_no_operator_namespace_given(renamed, testbed, tmp_path_factory):
    rc, report, out = Validate(testbed, tmp_path_factory.mktemp("renamed-validate")).run()
    assert rc == 0, out[-3000:]
    assert report["failed"] == 0 and report["passed"] == len(renamed.gpu_nodes)
    assert all(row["checks"]["operands"] == "pass" and row["checks"]["monitoring"] == "pass" for row in report["rows"])
    assert "operator: namespace %s (cluster_policy), ClusterPolicy %s" % (NAMESPACE, POLICY) in out
