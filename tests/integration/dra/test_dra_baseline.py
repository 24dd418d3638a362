"""The gpu_baseline's DRA prerequisites on the ci-dra bed (Kubernetes v1.36, ``resource.k8s.io/v1`` served):
gpu_preflight_info run through ansible-playbook as the least-privilege identity reads the API server's version and
API discovery, and the baseline's cluster checks in GPUCluster mode pass over what it read. Read-only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "build" / "collections"))
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.dra_checks import (  # noqa: E402
    RESOURCE_API,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import (  # noqa: E402
    evaluate_cluster,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import (  # noqa: E402
    options,
)


@pytest.fixture(scope="module")
def preflight(run):
    return run("gpu_preflight_info", check=True, sections=["version", "crds"])


def test_the_api_server_serves_resource_k8s_io_v1_as_discovery_says(preflight):
    assert not preflight.get("failed"), preflight.get("msg")
    assert preflight["kubernetes_version"]["git_version"].startswith("v1.36")
    assert preflight["crds"][RESOURCE_API] is True
    # version and the four discovery GETs
    assert preflight["api_requests"] == 5


def test_the_dra_cluster_checks_pass_in_gpucluster_mode_and_are_absent_otherwise(preflight):
    gpucluster = evaluate_cluster(preflight, {}, options({"operator_mode": "gpucluster"}))["results"]
    dra = {r["id"]: (r["status"], r["layer"]) for r in gpucluster if r["id"].startswith("dra.")}
    assert dra == {"dra.kubernetes_version": ("pass", "dra"), "dra.api_served": ("pass", "dra")}, gpucluster
    default = evaluate_cluster(preflight, {}, options({}))["results"]
    assert not [r["id"] for r in default if r["id"].startswith("dra.")]
