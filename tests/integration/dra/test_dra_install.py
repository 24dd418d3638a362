"""gpu_operator on the ci-dra bed, whose release runs in GPUCluster mode (installed by the session fixture with
clusterPolicy.deployCR=false and gpuCluster.deployCR=true): the module recognises the mode, keeps it when no mode is
asked, and refuses to move the release to ClusterPolicy mode. Check mode only: the shared bed is never written."""

from __future__ import annotations

import pytest

from tests.integration.testbed.dra_helpers import CHART


@pytest.fixture(scope="module")
def plan(dra, run):
    def _plan(**args):
        return run(
            "gpu_operator",
            check=True,
            helm_binary=dra.bed.helm,
            chart_ref="gpu-operator",
            chart_repo_url=dra.bed.chart_repo_url,
            chart_version=CHART,
            **args,
        )

    return _plan


@pytest.mark.parametrize("mode", [{"mode": "gpucluster"}, {}], ids=["asked", "kept"])
def test_the_release_is_seen_in_gpucluster_mode_and_kept_there(plan, mode):
    result = plan(**mode)
    assert not result.get("failed"), result.get("msg")
    assert result["plan"]["mode"] == "gpucluster" and result["plan"]["from_version"] == CHART
    assert result["values"]["gpuCluster"] == {"deployCR": True}
    assert result["values"]["clusterPolicy"] == {"deployCR": False}


def test_moving_the_release_to_clusterpolicy_mode_is_refused_with_the_way_out(plan):
    result = plan(mode="clusterpolicy")
    assert result["failed"] is True and result["refused"] is True
    assert "the release runs in gpucluster mode and the operator does not migrate" in result["msg"]
    assert "uninstall the release" in result["msg"]
