"""gpu_operator off the main path, on the real test bed (kube-apiserver, helm v4, the stand-in chart with its NFD
subchart, validations template and the 26.7 line's extra CRDs, the simulated operator): a chart that does not render,
a failure after helm wrote a revision, a status from before the change, a disabled subchart's CRDs, older CRDs over
newer ones. Every run is ansible-playbook as the least-privilege identity (docs/rbac.yml); the audit log shows the
writes each one made."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.integration import simop_helpers
from tests.integration.operator_install.operator_install_helpers import NS, RELEASE, module_bed, wait_for
from tests.sim import chart
from tests.sim import testbed as tb
from tests.sim.operator.logic import ANN_FAULT

CP, NVD = "clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"
NFD_CRDS = sorted(c["metadata"]["name"] for c in chart.nfd_crd_documents("v26.7.0"))
# the CRDs v26.7.0 added: the GPUCluster and the DRA driver's ComputeDomains
V267_CRDS = ["computedomaincliques.resource.nvidia.com", "computedomains.resource.nvidia.com", "gpuclusters.nvidia.com"]
LAG = "observed-generation-lag"


@pytest.fixture(scope="module")
def bed(testbed, tmp_path_factory):
    """The simulated operator and a clean slate (no release, no operator CRDs) before and after this module; the NFD
    and v26.7.0 CRDs (GPUCluster, ComputeDomains) the specs leave behind are removed at the end."""
    st = tb.State(testbed.state_dir).load()
    with simop_helpers.simulated_operator(st, testbed.kubeconfig, tmp_path_factory.mktemp("release-safety-simop")):
        b = module_bed(testbed, tmp_path_factory.mktemp("release-safety"))
        b.clean_slate()
        try:
            yield b
        finally:
            b.clean_slate()
            for name in NFD_CRDS + V267_CRDS:
                if b.crd(name) is not None:
                    b.ext.delete_custom_resource_definition(name)


def history(bed):
    """``[(revision, status, chart version)]`` of the release, oldest first."""
    out = bed.helm_admin("history", RELEASE, "-n", NS, "-o", "json").stdout
    return [(h["revision"], h["status"], h["chart"].rsplit("-", 1)[1]) for h in json.loads(out)]


def crd_identity(bed, names):
    """``{name: (uid, generation)}``: the same values later mean the CRD was neither replaced nor its spec changed."""
    return {n: (bed.crd(n).metadata.uid, bed.crd(n).metadata.generation) for n in names}


def drivers_on(bed, version):
    """Every node's driver pod runs ``version`` and no node is mid-upgrade."""
    pods = bed.core.list_namespaced_pod(NS, label_selector="app.kubernetes.io/component=nvidia-driver").items
    nodes = bed.core.list_node(label_selector="nvidia.com/gpu-driver-upgrade-state").items
    return (
        bool(pods)
        and all(p.spec.containers[0].image.rsplit(":", 1)[-1].startswith(version) for p in pods)
        and all(n.metadata.labels["nvidia.com/gpu-driver-upgrade-state"] == "upgrade-done" for n in nodes)
    )


def revisions_created(writes):
    """The helm release revisions whose storage Secret the writes created (helm also updates older revisions' Secrets
    to record their status)."""
    prefix = "create secrets/sh.helm.release.v1.%s.v" % RELEASE
    return sorted(int(w[len(prefix) :]) for w in writes if w.startswith(prefix))


def crd_writes(writes):
    return sorted(w for w in writes if " customresourcedefinitions/" in w)


def crds_written(writes):
    """``{verb: {CRD names}}``: the CRDs the writes touched (the module's apply, helm v4's own apply of crds/ on an
    install, the module's delete)."""
    out = {}
    for w in crd_writes(writes):
        verb, path = w.split(" ", 1)
        out.setdefault(verb, set()).add(path.split("/", 1)[1])
    return out


def apply_as(bed, docs, manager):
    """Server-side apply ``docs`` as the admin with field manager ``manager``."""
    for body in docs:
        bed.ext.patch_custom_resource_definition(
            body["metadata"]["name"],
            body,
            field_manager=manager,
            force=True,
            _content_type="application/apply-patch+yaml",
        )


def cluster_nfd(bed):
    """The cluster's own NFD CRDs, installed as NFD documents it (``kubectl apply --server-side -k``): field manager
    kubectl."""
    apply_as(bed, chart.nfd_crd_documents("v26.7.0"), "kubectl")


def lag(bed, on):
    """The simulated operator's fault: leave the ClusterPolicy's next generation unobserved while it is set."""
    bed.custom.patch_cluster_custom_object(
        "nvidia.com",
        "v1",
        "clusterpolicies",
        "cluster-policy",
        {"metadata": {"annotations": {ANN_FAULT: LAG if on else None}}},
    )


# --- 1. a chart that does not render ------------------------------------------------------------------------


def test_a_chart_that_does_not_render_changes_nothing_and_the_same_revision_stays_deployed(bed):
    bed.clean_slate()
    bed.install("v26.3.3")
    crds = crd_identity(bed, [CP, NVD])
    mark = bed.mark()
    nri_without_cdi = {"cdi": {"enabled": False, "nriPluginEnabled": True}}  # the chart's validations template fails
    for check in (True, False):
        result = bed.module(check=check, chart_version="v26.7.0", values=nri_without_cdi)
        assert result["failed"] is True and result["changed"] is False, result["msg"]
        assert (result["revision_written"], result["rolled_back"]) == (False, False)
        assert "chart v26.7.0 does not render with these values, so helm would write no revision" in result["msg"]
        assert "nothing was changed and revision 1 (chart v26.3.3) is still deployed" in result["msg"]
        assert "cdi.nriPluginEnabled=true needs cdi.enabled=true" in result["helm_error"]
    assert bed.writes_since(mark) == []  # no CRD applied, no revision written, nothing rolled back
    assert history(bed) == [(1, "deployed", "v26.3.3")]
    assert crd_identity(bed, [CP, NVD]) == crds  # the CRDs stay at v26.3.3


# --- 2. a failure after helm wrote a revision ---------------------------------------------------------------

UNSCHEDULABLE_OPERATOR = {"operator": {"nodeSelector": {"gpuops.io/no-such-node": "true"}}}


def test_a_failure_after_helm_wrote_a_revision_rolls_back_to_the_revision_deployed_before_the_run_only(bed):
    bed.clean_slate()
    bed.install("v26.3.3")  # revision 1
    bed.install("v26.7.0")  # revision 2
    mark = bed.mark()
    # the operator's pod cannot be scheduled: helm writes revision 3, applies it and times out waiting for it
    result = bed.module(chart_version="v26.7.0", values=UNSCHEDULABLE_OPERATOR, timeout=8)
    assert result["failed"] is True and result["changed"] is True
    assert (result["revision_written"], result["failed_revision"]) == (True, 3)
    assert (result["rolled_back"], result["rollback_revision"], result["rollback_error"]) == (True, 2, None)
    assert "helm upgrade to chart v26.7.0 wrote revision 3 and failed" in result["msg"]
    assert "context deadline exceeded" in result["helm_error"]
    assert (
        "The release was rolled back to revision 2 (chart v26.7.0), the revision deployed before this run; "
        "it is now revision 4" in result["msg"]
    )
    # never back to revision 1, the older chart
    assert history(bed) == [
        (1, "superseded", "v26.3.3"),
        (2, "superseded", "v26.7.0"),
        (3, "failed", "v26.7.0"),
        (4, "deployed", "v26.7.0"),
    ]
    assert "nodeSelector" not in json.dumps(bed.release_values())
    writes = bed.writes_since(mark)
    assert revisions_created(writes) == [3, 4]  # the failed upgrade and the rollback
    assert crd_writes(writes) == sorted("patch customresourcedefinitions/%s" % n for n in [CP, NVD] + V267_CRDS)


def test_without_rollback_on_failure_the_failed_revision_stays_and_the_message_names_the_way_back(bed):
    bed.clean_slate()
    bed.install("v26.7.0")  # revision 1
    mark = bed.mark()
    result = bed.module(chart_version="v26.7.0", values=UNSCHEDULABLE_OPERATOR, timeout=8, rollback_on_failure=False)
    assert result["failed"] is True and result["rolled_back"] is False and result["failed_revision"] == 2
    assert "rollback_on_failure is false, so the release stays at revision 2 (failed)" in result["msg"]
    assert "revision 1 (chart v26.7.0) was deployed before this run" in result["msg"]
    assert "helm rollback gpu-operator 1 -n gpu-operator returns to it" in result["msg"]
    assert history(bed) == [(1, "deployed", "v26.7.0"), (2, "failed", "v26.7.0")]
    assert revisions_created(bed.writes_since(mark)) == [2]  # the failed upgrade, no rollback


# --- 3. a status from before the change ---------------------------------------------------------------------


def test_the_wait_does_not_pass_until_the_operator_has_observed_the_new_generation(bed):
    bed.clean_slate()
    bed.install("v26.7.0")
    lag(bed, True)
    try:
        mark = bed.mark()
        result = bed.module(chart_version="v26.7.0", values={"driver": {"version": "595.91.08"}}, ready_timeout=6)
        cp = bed.cluster_policy()
        # what a naive wait would have taken: state ready, from the generation before the change
        assert cp["status"]["state"] == "ready"
        generation, observed = cp["metadata"]["generation"], cp["status"]["observedGeneration"]
        assert generation == observed + 1
        assert (
            result["failed"] is True
            and "is updated but ClusterPolicy is not ready after 6s (state ready)" in result["msg"]
        )
        assert (
            "ClusterPolicy cluster-policy: the operator has observed generation %d (status.observedGeneration), the "
            "spec is at generation %d; its status is from before the change" % (observed, generation) in result["msg"]
        )
        assert result["readiness"]["stale"] and result["readiness"]["observed_generation"] == observed
        writes = bed.writes_since(mark)
        assert revisions_created(writes) == [2] and "patch clusterpolicies/cluster-policy" in writes
    finally:
        lag(bed, False)
    caught_up = {"state": "ready", "observedGeneration": generation}
    # ready at the new generation is not yet rolled out: NVIDIA's upgrade controller then takes each node through its
    # upgrade (26.7 keeps the ClusterPolicy notReady meanwhile), so wait for every driver pod on the new version too
    wait_for(
        lambda: caught_up.items() <= bed.cluster_policy()["status"].items() and drivers_on(bed, "595.91.08"),
        120,
        what="the driver rolled out",
    )

    # with the operator catching up while the module waits: the run ends only after it has
    healed = {}

    def catch_up_later():
        wait_for(lambda: bed.cluster_policy()["metadata"]["generation"] > generation, 120, what="the module's write")
        time.sleep(4)  # how long the operator lags behind the new generation
        healed["at"] = time.monotonic()
        healed["status"] = bed.cluster_policy()["status"]
        lag(bed, False)

    lag(bed, True)
    thread = threading.Thread(target=catch_up_later, daemon=True)
    thread.start()
    try:
        result = bed.module(chart_version="v26.7.0", values={"driver": {"version": "595.91.09"}}, ready_timeout=120)
        done = time.monotonic()
    finally:
        thread.join(130)
        lag(bed, False)
    assert not result.get("failed"), result.get("msg")
    assert healed["status"]["state"] == "ready" and healed["status"]["observedGeneration"] == generation
    assert done > healed["at"]  # ready only once the operator had observed the new spec
    assert (
        result["readiness"]["observed_generation"] == bed.cluster_policy()["metadata"]["generation"] == generation + 1
    )
    assert result["readiness"]["stale"] == []


# --- 4. a disabled subchart ---------------------------------------------------------------------------------


def test_a_disabled_subchart_s_crds_are_neither_applied_nor_removed(bed):
    bed.clean_slate()
    cluster_nfd(bed)
    own = crd_identity(bed, NFD_CRDS)
    mark = bed.mark()
    installed = bed.install("v26.7.0")  # the nodes carry NFD labels, so nfd.enabled=false
    assert installed["values"]["nfd"] == {"enabled": False}
    assert sorted(s["name"] for s in installed["plan"]["crds_skipped"]) == NFD_CRDS
    assert {s["reason"] for s in installed["plan"]["crds_skipped"]} == {
        "subchart node-feature-discovery disabled by nfd.enabled=false"
    }
    assert sorted(installed["crds_applied"]) == sorted([CP, NVD] + V267_CRDS)
    gone = bed.module(state="absent", remove_crds=True)
    assert not gone.get("failed"), gone.get("msg")
    assert sorted(gone["crds_removed"]) == sorted([CP, NVD] + V267_CRDS)
    assert [c["name"] for c in gone["crds_left"]] == NFD_CRDS
    assert [w for w in gone["warnings"] if w.startswith("remove_crds left these CRDs alone: ")] == [
        "remove_crds left these CRDs alone: "
        + "; ".join("%s (subchart node-feature-discovery disabled by nfd.enabled=false)" % n for n in NFD_CRDS)
    ]
    assert crd_identity(bed, NFD_CRDS) == own
    operator_crds = {CP, NVD, *V267_CRDS}
    assert crds_written(bed.writes_since(mark)) == {"patch": operator_crds, "delete": operator_crds}


def test_an_enabled_subchart_s_crds_are_applied_but_never_removed_from_another_owner(bed):
    bed.clean_slate()
    cluster_nfd(bed)
    installed = bed.install("v26.7.0", values={"nfd": {"enabled": True}})
    assert set(NFD_CRDS) <= set(installed["crds_applied"]) and installed["plan"]["crds_skipped"] == []
    mark = bed.mark()
    gone = bed.module(state="absent", remove_crds=True)
    assert not gone.get("failed"), gone.get("msg")
    reason = "another owner manages it: spec fields managed by kubectl"
    assert {c["name"]: c["reason"] for c in gone["crds_left"]} == dict.fromkeys(NFD_CRDS, reason)
    assert crds_written(bed.writes_since(mark)) == {"delete": {CP, NVD, *V267_CRDS}}
    assert all(bed.crd(n) is not None for n in NFD_CRDS)


# --- 5. older CRDs over newer ones --------------------------------------------------------------------------


def test_installing_older_crds_over_newer_ones_is_refused_with_the_count_unless_forced(bed):
    bed.clean_slate()
    newer = [d for d in chart.crd_documents("v26.7.0") if d["metadata"]["name"] in (CP, NVD)]
    apply_as(bed, newer, "helm")  # left by a v26.7.0 install
    live = crd_identity(bed, [CP, NVD])
    mark = bed.mark()
    for check in (True, False):
        result = bed.module(check=check, chart_version="v25.10.1")
        assert result["failed"] is True and result["refused"] is True
        lost = {c["name"]: c["fields_removed"] for c in result["crd_changes"]}
        # among them fields v26.3.3 and v26.7.0 added (reference §8: the API server would prune them everywhere)
        assert {"v1:spec.sandboxWorkloads.mode", "v1:status.observedGeneration"} <= set(lost[CP])
        assert {"v1alpha1:spec.default", "v1alpha1:spec.upgradePolicy.drain.enable"} <= set(lost[NVD])
        total = len(lost[CP]) + len(lost[NVD])
        assert "would drop %d field(s) from the stored schemas" % total in result["msg"]
        assert "clusterpolicies.nvidia.com: %d (" % len(lost[CP]) in result["msg"]
        assert "nvidiadrivers.nvidia.com: %d (" % len(lost[NVD]) in result["msg"]
        assert "Set force: true to apply them anyway" in result["msg"]
    assert bed.writes_since(mark) == [] and bed.release() is None
    assert crd_identity(bed, [CP, NVD]) == live

    forced = bed.install("v25.10.1", force=True)
    warning = "applying the CRDs of chart v25.10.1 drops %d field(s)" % total
    assert [w for w in forced["warnings"] if w.startswith(warning)]
    assert forced["readiness"]["ready"] is True  # v25.10.1's CRDs carry no observedGeneration: the driver pods decide
    assert crds_written(bed.writes_since(mark)) == {"patch": {CP, NVD}}
