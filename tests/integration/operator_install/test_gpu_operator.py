"""gpu_operator on the real test bed: install, idempotence, CRDs-first upgrade, check mode, rollback, version gates,
absent, helm v3 and v4, bad input. Every run is ansible-playbook as the least-privilege identity (docs/rbac.yml)."""

from __future__ import annotations

import pytest
from operator_install_helpers import NS, wait_for

SANDBOX_MODE = "v1:spec.sandboxWorkloads.mode"


@pytest.fixture(params=["helm", "helm3"])
def helm(request, testbed):
    """Both helm majors: testbed.helm is v4, testbed.helm3 is v3."""
    return getattr(testbed, request.param)


def test_fresh_install_is_ready_and_a_second_run_changes_nothing(bed, helm):
    bed.clean_slate()
    first = bed.install("v25.10.1", helm=helm)
    assert first["changed"] is True and first["plan"]["action"] == "install"
    assert first["helm_version"].startswith("v4." if helm == bed.t.helm else "v3.")
    assert first["release"]["chart_version"] == "v25.10.1" and first["release"]["status"] == "deployed"
    assert first["readiness"]["ready"] is True and first["readiness"]["state"] == "ready"
    # synthesised from the cluster: the bed's nodes carry NFD labels, no ServiceMonitor CRD exists
    assert first["values"]["nfd"] == {"enabled": False}
    assert first["values"]["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    assert bed.release_values() == first["values"]  # exactly the effective values reached helm

    mark = bed.mark()
    second = bed.install("v25.10.1", helm=helm)
    assert second["changed"] is False and second["plan"]["action"] == "none"
    assert bed.writes_since(mark) == []
    assert bed.release()["revision"] == 1


def test_upgrade_applies_the_new_crd_first_so_the_added_field_survives(bed, helm):
    bed.clean_slate()
    bed.install("v25.10.1", helm=helm)
    old_crd = bed.crd("clusterpolicies.nvidia.com").to_dict()
    assert (
        "mode"
        not in old_crd["spec"]["versions"][0]["schema"]["open_apiv3_schema"]["properties"]["spec"]["properties"][
            "sandboxWorkloads"
        ]["properties"]
    )

    result = bed.install("v26.3.3", helm=helm, values={"sandboxWorkloads": {"mode": "kata"}})
    plan = result["plan"]
    assert (plan["action"], plan["from_version"], plan["to_version"]) == ("upgrade", "v25.10.1", "v26.3.3")
    cp_change = [c for c in plan["crd_changes"] if c["name"] == "clusterpolicies.nvidia.com"][0]
    assert cp_change["action"] == "update" and SANDBOX_MODE in cp_change["fields_added"]
    assert "clusterpolicies.nvidia.com" in result["crds_applied"]
    # The API server prunes fields its CRD does not know; the chart's pre-upgrade hook applies nothing here, so the
    # field is only stored because the module applied the v26.3.3 CRD before the upgrade.
    assert bed.cluster_policy()["spec"]["sandboxWorkloads"]["mode"] == "kata"
    assert result["release"]["chart_version"] == "v26.3.3" and result["readiness"]["ready"] is True


def test_check_mode_returns_the_plan_and_the_api_server_sees_no_write(bed):
    bed.clean_slate()
    bed.install("v25.10.1")
    mark = bed.mark()
    result = bed.module(check=True, diff=True, chart_version="v26.3.3", values={"driver": {"version": "580.126.21"}})
    assert not result.get("failed"), result.get("msg")
    plan = result["plan"]
    assert result["changed"] is True and plan["action"] == "upgrade"
    assert (plan["from_version"], plan["to_version"]) == ("v25.10.1", "v26.3.3")
    assert "driver.version" in plan["values_changed"]
    assert (
        SANDBOX_MODE in [c for c in plan["crd_changes"] if c["name"] == "clusterpolicies.nvidia.com"][0]["fields_added"]
    )
    values_diff, manifest_diff = result["diff"]
    assert "580.126.21" in values_diff["after"] and "580.126.21" not in values_diff["before"]
    assert "kind: ClusterPolicy" in manifest_diff["before"] and "v26.3.3" in manifest_diff["after"]
    assert bed.writes_since(mark) == []
    assert bed.release()["version"] == "v25.10.1"


def test_a_failed_upgrade_rolls_back_and_reports_both_outcomes(bed):
    bed.clean_slate()
    bed.install("v25.10.1", values={"driver": {"version": "580.105.08"}})
    # The v26.3.3 ClusterPolicy is rejected by its CRD's enum: the upgrade fails after Helm started writing.
    result = bed.module(chart_version="v26.3.3", values={"mig": {"strategy": "bogus"}})
    assert result["failed"] is True and result["changed"] is True
    assert "Unsupported value" in result["helm_error"] and "spec.mig.strategy" in result["helm_error"]
    assert result["rolled_back"] is True and result["rollback_error"] is None
    assert "rolled back to revision" in result["msg"] and "v26.3.3" in result["msg"]
    release = bed.release()
    assert release["version"] == "v25.10.1" and release["status"] == "deployed"
    assert bed.release_values()["driver"] == {"version": "580.105.08"}


def test_an_unsupported_jump_is_refused_with_the_reason_before_any_write(bed):
    bed.clean_slate()
    bed.install("v25.10.1")
    mark = bed.mark()
    result = bed.module(chart_version="v26.7.0")
    assert result["failed"] is True and result["refused"] is True
    assert "skips the major release(s) 26.3" in result["msg"] and "v26.3.x first" in result["msg"]
    assert bed.writes_since(mark) == []
    assert bed.release()["version"] == "v25.10.1"


def test_a_downgrade_and_a_move_to_gpucluster_mode_are_refused_before_any_write(bed):
    bed.clean_slate()
    bed.install("v26.3.3")
    mark = bed.mark()
    result = bed.module(chart_version="v25.10.1")
    assert result["failed"] is True and "downgrade from v26.3.3 to v25.10.1" in result["msg"]
    assert "force: true" in result["msg"]
    # GPUCluster mode is for new installs: the operator never migrates a ClusterPolicy
    moved = bed.module(chart_version="v26.7.1", mode="gpucluster")
    assert moved["failed"] is True and moved["refused"] is True
    assert "runs in clusterpolicy mode and the operator does not migrate" in moved["msg"]
    assert bed.writes_since(mark) == []
    assert bed.release()["version"] == "v26.3.3"


def test_helm_v4_takes_back_a_field_another_manager_changed(bed):
    """Helm 4 applies server-side: after a client patched the ClusterPolicy, the upgrade conflicts unless forced."""
    bed.clean_slate()
    bed.install("v26.3.3", values={"driver": {"version": "580.126.20"}})
    # a canary-style client patch (merge patch) of a field the chart renders, as another field manager
    bed.custom.patch_cluster_custom_object(
        "nvidia.com",
        "v1",
        "clusterpolicies",
        "cluster-policy",
        {"spec": {"driver": {"version": "999.0.0"}}},
        field_manager="canary-test",
    )
    refused = bed.module(chart_version="v26.3.3", values={"driver": {"version": "580.126.21"}}, force_conflicts=False)
    assert refused["failed"] is True and "conflict" in refused["helm_error"].lower()
    assert "canary-test" in refused["helm_error"]

    forced = bed.install("v26.3.3", values={"driver": {"version": "580.126.21"}})
    assert forced["changed"] is True
    assert bed.cluster_policy()["spec"]["driver"]["version"] == "580.126.21"


def test_a_release_installed_by_helm_v3_is_upgraded_by_helm_v4(bed):
    """helm v4 keeps a release's client-side apply; --force-conflicts would be rejected there, so it is not passed."""
    bed.clean_slate()
    bed.install("v25.10.1", helm=bed.t.helm3)
    assert bed.release().get("applyMethod") in (None, "csa")  # helm v3 records no apply method
    result = bed.install("v26.3.3", helm=bed.t.helm)
    assert result["changed"] is True and result["release"]["chart_version"] == "v26.3.3"
    assert result["release"]["status"] == "deployed"


def test_readiness_failure_names_the_conditions_and_the_not_ready_operands_per_node(bed):
    bed.clean_slate()
    bed.install("v26.3.3")
    node = sorted(n.metadata.name for n in bed.core.list_node(label_selector="nvidia.com/gpu.present=true").items)[0]
    bed.core.patch_node(node, {"metadata": {"annotations": {"sim.gpuops.io/fault": "driver-crash-kernel-headers"}}})
    try:
        wait_for(lambda: bed.cluster_policy().get("status", {}).get("state") == "notReady", 60, what="notReady")
        result = bed.module(chart_version="v26.3.3", values={"driver": {"version": "580.126.20"}}, ready_timeout=10)
        assert result["failed"] is True and "not ready" in result["msg"]
        assert "DriverNotReady" in result["msg"] and node in result["msg"]
        readiness = result["readiness"]
        assert readiness["state"] == "notReady" and "driver" in readiness["not_ready_operands"][node]
        assert any(c["reason"] == "DriverNotReady" for c in readiness["conditions"])
    finally:
        bed.core.patch_node(node, {"metadata": {"annotations": {"sim.gpuops.io/fault": None}}})


def test_absent_removes_the_release_but_leaves_crds_unless_asked(bed):
    bed.clean_slate()
    bed.install("v26.3.3")
    check = bed.module(state="absent", check=True)
    assert check["changed"] is True and bed.release() is not None

    gone = bed.module(state="absent")
    assert gone["changed"] is True and gone["crds_removed"] == []
    assert bed.release() is None
    assert bed.crd("clusterpolicies.nvidia.com") is not None
    assert bed.module(state="absent")["changed"] is False

    with_crds = bed.module(state="absent", remove_crds=True, chart_version="v26.3.3")
    assert with_crds["changed"] is True
    assert set(with_crds["crds_removed"]) == {"clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"}
    wait_for(lambda: bed.crd("clusterpolicies.nvidia.com") is None, 30, what="CRD deleted")


@pytest.mark.parametrize(
    "args, named",
    [
        ({"chart_version": "v9.9.9"}, "chart version v9.9.9"),
        ({"chart_version": "v26.3.3", "chart_repo_url": "http://127.0.0.1:9/charts"}, "http://127.0.0.1:9/charts"),
        ({"chart_version": "v26.3.3", "context": "no-such-context"}, "context 'no-such-context'"),
    ],
    ids=["unknown-version", "unreachable-repository", "wrong-context"],
)
def test_bad_input_fails_with_a_message_naming_it_and_writes_nothing(bed, args, named):
    mark = bed.mark()
    result = bed.module(**args)
    assert result["failed"] is True and named in result["msg"]
    assert bed.writes_since(mark) == []


def test_the_namespace_is_where_helm_keeps_the_release(bed):
    bed.clean_slate()
    bed.install("v26.3.3")
    secrets = bed.core.list_namespaced_secret(NS, label_selector="owner=helm").items
    assert secrets and all(s.type == "helm.sh/release.v1" for s in secrets)
