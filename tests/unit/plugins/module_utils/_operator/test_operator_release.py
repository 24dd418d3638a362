"""Specification of plugins/module_utils/_operator/release/: gates, CRD plan and ownership, idempotence, check mode,
failure handling by what helm wrote, readiness that waits for the operator to observe the spec. Helm and the API
server are in-memory stand-ins (no cluster) that keep helm's history the way helm does."""

from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.helm import HelmError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.release import (
    OperatorRelease,
    ReleaseError,
    ReleaseParams,
    crd_changes,
    crd_gate,
    observed_generation,
    other_owner,
    schema_fields,
    stale_status,
    value_changes,
    version_gate,
)


def crd(name, spec_props, group="nvidia.com", **meta):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": dict({"name": name}, **meta),
        "spec": {"group": group, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]},
    }


CP = "clusterpolicies.nvidia.com"
NFD = "nodefeaturerules.nfd.k8s-sigs.io"
OLD_CP = crd(CP, {"driver": {"type": "object"}})
NEW_CP = crd(
    CP,
    {"driver": {"type": "object"}, "sandboxWorkloads": {"type": "object", "properties": {"mode": {"type": "string"}}}},
)
NFD_CRD = crd(NFD, {"rules": {"type": "array"}}, group="nfd.k8s-sigs.io")
CHARTS = {
    "v25.10.1": {"values": {"driver": {"version": "580.105.08"}}, "crds": [OLD_CP]},
    "v26.3.3": {"values": {"driver": {"version": "580.126.20"}}, "crds": [NEW_CP]},
    "v26.7.0": {"values": {"driver": {"version": "595.91.07"}}, "crds": [NEW_CP]},
}
VALIDATION_FAILURE = (
    "helm template failed (rc 1): Error: execution error at (gpu-operator/templates/validations.yaml:3:6): "
    "cdi.nriPluginEnabled needs cdi.enabled"
)


class FakeHelm:
    """Releases and charts in memory, history kept as helm keeps it; records writes in ``self.log``.

    Every chart has an NFD subchart (condition ``nfd.enabled``, default true) shipping NFD_CRD. ``fail_upgrade`` is
    ``(message, writes_revision)``: a failure before helm writes a revision, or after it wrote one (marked failed).
    """

    major = 4

    def __init__(self, log):
        self.log = log
        self.fail_upgrade = self.fail_rollback = self.fail_uninstall = None
        self.history_list = []  # dicts revision/status/version/values
        self.tmpdir = None

    # reads
    def show_chart(self, chart, version):
        version = version or "v26.7.0"
        if version not in CHARTS:
            raise HelmError("chart version %s of %s was not found" % (version, chart.describe()))
        return {"version": version, "appVersion": version}

    def show_values(self, chart, version):
        return dict(copy.deepcopy(CHARTS[version]["values"]), nfd={"enabled": True})

    def chart_crds(self, chart, version, values):
        crds = copy.deepcopy(CHARTS[version]["crds"])
        if values["nfd"]["enabled"]:
            return crds + [copy.deepcopy(NFD_CRD)], []
        return crds, [{"name": NFD, "chart": "node-feature-discovery", "reason": "disabled by nfd.enabled=false"}]

    def _current(self):
        return self.history_list[-1] if self.history_list else None

    def release(self, name, ns):
        cur = self._current()
        if not cur:
            return None
        return {
            "name": name,
            "namespace": ns,
            "chart_version": cur["version"],
            "revision": cur["revision"],
            "status": cur["status"],
        }

    def get_values(self, name, ns, revision=None, computed=False):
        values = copy.deepcopy(self._current()["values"])
        return self._merge(self.show_values(None, self._current()["version"]), values) if computed else values

    def _merge(self, base, top):
        for key, value in top.items():
            base[key] = self._merge(base.get(key) or {}, value) if isinstance(value, dict) else value
        return base

    def history(self, name, ns):
        return [
            {"revision": h["revision"], "status": h["status"], "chart_version": h["version"]} for h in self.history_list
        ]

    def get_manifest(self, name, ns):
        return "kind: ClusterPolicy # %s\n" % self._current()["version"]

    def get_hooks(self, name, ns):
        return ""

    def template(self, spec, api_versions=(), kube_version=None):
        self.capabilities = (list(api_versions), kube_version)
        with open(spec.values_file) as f:
            cdi = (yaml.safe_load(f) or {}).get("cdi") or {}
        if cdi.get("nriPluginEnabled") and cdi.get("enabled") is False:
            raise HelmError(VALIDATION_FAILURE)
        return "kind: ClusterPolicy # %s\n" % spec.version

    def run(self, args, **kwargs):
        return 0, "[]", ""

    # writes
    def _write(self, version, values, status):
        if status == "deployed":
            for h in self.history_list:
                if h["status"] == "deployed":
                    h["status"] = "superseded"
        self.history_list.append(
            {"revision": len(self.history_list) + 1, "status": status, "version": version, "values": values}
        )

    def upgrade(self, spec, **kwargs):
        version = spec.version
        with open(spec.values_file) as f:
            values = yaml.safe_load(f)
        self.log.append(("helm upgrade", version))
        if self.fail_upgrade:
            message, writes_revision = self.fail_upgrade  # pylint: disable=unpacking-non-sequence
            if writes_revision:
                self._write(version, values, "failed")
            raise HelmError(message)
        self._write(version, values, "deployed")

    def rollback(self, name, ns, revision, apply_method=None, **kwargs):
        self.log.append(("helm rollback", revision))
        if self.fail_rollback:
            raise HelmError(self.fail_rollback)
        old = [h for h in self.history_list if h["revision"] == revision][0]
        self._write(old["version"], old["values"], "deployed")

    def uninstall(self, name, ns, **kwargs):
        self.log.append(("helm uninstall", name))
        if self.fail_uninstall:
            message, status = self.fail_uninstall  # pylint: disable=unpacking-non-sequence
            self.history_list[-1]["status"] = status
            raise HelmError(message)
        self.history_list = []


def policy(state="ready", generation=1, status_observed=1, condition_observed=None, driver_version="580.105.08"):
    ready = {"type": "Ready", "status": "True" if state == "ready" else "False", "reason": "Reconciled"}
    if state != "ready":
        ready.update(reason="DriverNotReady", message="driver pods not ready")
    if condition_observed is not None:
        ready["observedGeneration"] = condition_observed
    status = {"state": state, "conditions": [ready]}
    if status_observed is not None:
        status["observedGeneration"] = status_observed
    return {
        "metadata": {"name": "cluster-policy", "generation": generation},
        "spec": {"driver": {"version": driver_version}},
        "status": status,
    }


def driver_pod(node, tag, ready=True):
    return {
        "metadata": {
            "name": "nvidia-driver-daemonset-" + node,
            "labels": {"app": "nvidia-driver-daemonset", "app.kubernetes.io/component": "nvidia-driver"},
        },
        "spec": {"nodeName": node, "containers": [{"image": "nvcr.io/nvidia/driver:%s" % tag}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


#: What the API server serves, as aggregated discovery lists it: ``(group, version, resource, kind, namespaced)``.
SERVED = [
    ("", "v1", "nodes", "Node", False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("apps", "v1", "deployments", "Deployment", True),
    ("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    ("nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", False),
]


def discovery(served, core):
    """The aggregated discovery document of ``/api`` (``core``) or ``/apis`` for ``served``."""
    groups = {}
    for group, version, plural, kind, namespaced in served:
        if (group == "") == core:
            resource = {"resource": plural, "responseKind": {"kind": kind}, "scope": "Namespaced" if namespaced else ""}
            groups.setdefault((group, version), []).append(resource)
    items = [{"metadata": {"name": g}, "versions": [{"version": v, "resources": r}]} for (g, v), r in groups.items()]
    return {"kind": "APIGroupDiscoveryList", "items": items}


class FakeKube:
    """CRDs by name; ``policies`` is a list of ClusterPolicy dicts returned one per LIST (the last one repeats);
    ``served`` is what API discovery lists; ``objects`` other objects by URL path."""

    def __init__(self, log, crds=(), nodes=()):
        self.log = log
        self.crds = {c["metadata"]["name"]: copy.deepcopy(c) for c in crds}
        self.nodes = list(nodes)
        self.policies = [policy()]
        self.pods = []
        self.served = list(SERVED)
        self.objects = {}
        self.git_version = "v1.36.3"

    def get(self, path, what=None, accept=None):
        return discovery(self.served, core=path == "/api")

    def version(self):
        return {"git_version": self.git_version}

    def get_or_none(self, path, what=None):
        if path in self.objects:
            return copy.deepcopy(self.objects[path])
        return copy.deepcopy(self.crds.get(path.rsplit("/", 1)[1]))

    def server_side_apply(self, path, body, field_manager, force=False, what=None, dry_run=False):
        self.log.append(("apply", path.rsplit("/", 1)[1], field_manager, force))
        self.crds[body["metadata"]["name"]] = copy.deepcopy(body)

    def delete_path(self, path, what=None):
        self.log.append(("delete", path.rsplit("/", 1)[1]))
        return self.crds.pop(path.rsplit("/", 1)[1], None) is not None

    def list_core(self, resource, namespace=None, **kw):
        return copy.deepcopy(self.nodes if resource == "nodes" else self.pods)

    def list_custom(self, group, version, plural, **kw):
        if plural != "clusterpolicies":
            return []
        current = self.policies[0] if len(self.policies) == 1 else self.policies.pop(0)
        return [copy.deepcopy(current)]


def params(**kw):
    base = dict(
        state="present",
        release_name="gpu-operator",
        release_namespace="gpu-operator",
        chart_ref="gpu-operator",
        chart_repo_url="https://charts.example",
        chart_version="v25.10.1",
        values={},
        detect=True,
        force=False,
        force_conflicts=True,
        wait=True,
        timeout=60,
        ready_timeout=0,
        remove_crds=False,
    )
    base.update(kw)
    return ReleaseParams(**base)


def gpu_node(name="gpu-0", **labels):
    return {
        "metadata": {
            "name": name,
            "labels": dict(
                {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"}, **labels
            ),
        }
    }


@pytest.fixture
def bed(tmp_path):
    log = []
    h = FakeHelm(log)
    h.tmpdir = str(tmp_path)
    return log, h, FakeKube(log, nodes=[gpu_node()])


def release(bed, check_mode=False, diff=False, ticks=None, **kw):
    _log, helm, kube = bed
    clock = iter(ticks or range(0, 10000, 10))
    settings = params(check_mode=check_mode, diff=diff, **kw)
    return OperatorRelease(settings, helm, kube, sleep=lambda s: None, clock=lambda: next(clock))


def run(bed, check_mode=False, diff=False, **kw):
    return release(bed, check_mode=check_mode, diff=diff, **kw).run()


def writes(log):
    return [e for e in log if e[0] in ("apply", "delete") or e[0].startswith("helm")]


def history(bed):
    return [(h["revision"], h["status"], h["version"]) for h in bed[1].history_list]


# --- gates --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "current, target",
    [("v25.10.1", "v25.10.1"), ("v25.10.0", "v25.10.1"), ("v25.10.1", "v26.3.3"), ("v26.3.0", "v26.7.0")],
)
def test_upgrades_within_a_major_or_to_the_next_are_allowed(current, target):
    assert version_gate(current, target) is None


def test_skipping_a_major_release_is_refused_with_the_reason_and_the_way_out():
    reason = version_gate("v25.10.1", "v26.7.0")
    assert "skips the major release(s) 26.3" in reason and "v26.3.x first" in reason and "force" in reason


def test_majors_seen_in_the_repository_count_too():
    assert "27.1" in version_gate("v26.7.0", "v27.3.0", majors={(27, 1), (27, 3)})


def test_a_downgrade_is_refused_unless_forced():
    assert "downgrade from v26.3.3 to v25.10.1" in version_gate("v26.3.3", "v25.10.1")
    assert version_gate("v26.3.3", "v25.10.1", force=True) is None
    assert version_gate("v25.10.1", "v26.7.0", force=True) is None


def test_a_non_operator_version_is_an_error_naming_it():
    with pytest.raises(ReleaseError, match="'latest' is not a GPU Operator version"):
        version_gate("v26.3.3", "latest")


def test_crds_that_would_lose_fields_are_refused_with_the_count_unless_forced():
    lost = {CP: ["v1:spec.a", "v1:spec.b", "v1:spec.c", "v1:spec.d"], "nvidiadrivers.nvidia.com": ["v1alpha1:spec.x"]}
    reason = crd_gate(lost, "v25.10.1")
    assert "chart v25.10.1's CRDs lack" in reason and "would drop 5 field(s)" in reason
    assert "clusterpolicies.nvidia.com: 4 (v1:spec.a, v1:spec.b, v1:spec.c, ...)" in reason
    assert "nvidiadrivers.nvidia.com: 1 (v1alpha1:spec.x)" in reason and "force: true" in reason
    assert crd_gate(lost, "v25.10.1", force=True) is None
    assert crd_gate({}, "v25.10.1") is None


# --- CRD and values plans -----------------------------------------------------------------------------------


def test_crd_changes_name_the_added_and_removed_fields():
    [change] = crd_changes([NEW_CP], {CP: OLD_CP})
    assert change["action"] == "update"
    assert change["fields_added"] == ["v1:spec.sandboxWorkloads", "v1:spec.sandboxWorkloads.mode"]
    assert crd_changes([NEW_CP], {})[0]["action"] == "create"
    assert crd_changes([NEW_CP], {CP: NEW_CP})[0]["action"] == "none"
    [older] = crd_changes([OLD_CP], {CP: NEW_CP})
    assert older["fields_removed"] == ["v1:spec.sandboxWorkloads", "v1:spec.sandboxWorkloads.mode"]


def test_schema_fields_walk_arrays():
    schema = {"properties": {"t": {"type": "array", "items": {"properties": {"key": {}}}}}}
    assert schema_fields(schema) == {"t", "t[].key"}


def test_value_changes_list_dotted_paths():
    assert value_changes({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}, "d": 0}) == ["a.c", "d"]


def managed(*entries):
    return [
        {"manager": m, "operation": op, "fieldsV1": {"f:spec": {}} if spec else {"f:status": {}}, **extra}
        for m, op, spec, extra in entries
    ]


@pytest.mark.parametrize(
    "meta, owner",
    [
        ({"managedFields": managed(("gpuops-gpu-operator", "Apply", True, {}))}, None),
        ({"managedFields": managed(("helm", "Update", True, {}), ("x", "Update", False, {}))}, None),
        ({"managedFields": managed(("kube-apiserver", "Update", True, {"subresource": "status"}))}, None),
        (
            {
                "annotations": {
                    "meta.helm.sh/release-name": "gpu-operator",
                    "meta.helm.sh/release-namespace": "gpu-operator",
                }
            },
            None,
        ),
        (
            {"annotations": {"meta.helm.sh/release-name": "nfd", "meta.helm.sh/release-namespace": "nfd-system"}},
            "part of Helm release nfd-system/nfd",
        ),
        ({"labels": {"app.kubernetes.io/managed-by": "argocd"}}, "app.kubernetes.io/managed-by=argocd"),
        ({"labels": {"app.kubernetes.io/managed-by": "Helm"}}, None),
        (
            {
                "managedFields": managed(
                    ("gpuops-gpu-operator", "Apply", True, {}), ("kubectl-client-side-apply", "Update", True, {})
                )
            },
            "spec fields managed by kubectl-client-side-apply",
        ),
    ],
    ids=[
        "ours",
        "helm-crds-dir",
        "status-only",
        "our-release",
        "other-release",
        "other-tool-label",
        "helm-label",
        "other-manager",
    ],
)
def test_a_crd_belongs_to_another_owner_by_release_annotations_label_or_spec_field_managers(meta, owner):
    live = crd(NFD, {}, group="nfd.k8s-sigs.io", **meta)
    assert other_owner(live, "gpu-operator", "gpu-operator") == owner


# --- the life cycle -----------------------------------------------------------------------------------------


def test_fresh_install_applies_crds_first_then_one_helm_write(bed):
    log = bed[0]
    result = run(bed)
    assert result["changed"] and result["plan"]["action"] == "install"
    assert writes(log) == [("apply", CP, "gpuops-gpu-operator", True), ("helm upgrade", "v25.10.1")]
    assert result["release"]["chart_version"] == "v25.10.1"
    # the cluster has NFD labels and no ServiceMonitor CRD: both synthesised, and returned
    assert result["values"]["nfd"] == {"enabled": False}
    assert result["values"]["dcgmExporter"]["serviceMonitor"]["enabled"] is False


def test_the_crds_of_a_disabled_subchart_are_neither_applied_nor_planned_and_are_named(bed):
    result = run(bed)
    assert [c["name"] for c in result["plan"]["crd_changes"]] == [CP]
    assert result["plan"]["crds_skipped"] == [
        {"name": NFD, "chart": "node-feature-discovery", "reason": "disabled by nfd.enabled=false"}
    ]
    assert result["crds_applied"] == [CP] and NFD not in bed[2].crds


def test_the_crds_of_an_enabled_subchart_are_applied(bed):
    bed[2].nodes = [{"metadata": {"name": "gpu-0", "labels": {"nvidia.com/gpu.present": "true"}}}]  # no NFD yet
    result = run(bed)
    assert "nfd" not in result["values"]  # the chart's default, nfd.enabled=true, stands
    assert result["crds_applied"] == [CP, NFD] and result["plan"]["crds_skipped"] == []


def test_a_second_run_with_the_same_inputs_writes_nothing(bed):
    run(bed, values={"driver": {"version": "580.105.08"}})
    before = len(writes(bed[0]))
    again = run(bed, values={"driver": {"version": "580.105.08"}})
    assert again["changed"] is False and again["plan"]["action"] == "none"
    assert len(writes(bed[0])) == before


def test_changed_values_are_an_update_listing_the_paths(bed):
    run(bed)
    result = run(bed, values={"driver": {"version": "580.999.99"}})
    assert result["plan"]["action"] == "update" and result["plan"]["values_changed"] == ["driver.version"]


def test_upgrade_applies_the_new_crd_before_helm_and_reports_the_added_field(bed):
    log, _helm, kube = bed
    run(bed)
    kube.crds[CP] = copy.deepcopy(OLD_CP)
    result = run(bed, chart_version="v26.3.3")
    plan = result["plan"]
    assert (plan["action"], plan["from_version"], plan["to_version"]) == ("upgrade", "v25.10.1", "v26.3.3")
    assert "v1:spec.sandboxWorkloads.mode" in plan["crd_changes"][0]["fields_added"]
    assert writes(log)[-2:] == [("apply", CP, "gpuops-gpu-operator", True), ("helm upgrade", "v26.3.3")]


def test_check_mode_returns_the_plan_and_writes_nothing(bed):
    log = bed[0]
    run(bed)
    before = len(writes(log))
    result = run(bed, check_mode=True, diff=True, chart_version="v26.3.3", values={"driver": {"version": "1.2.3"}})
    assert result["changed"] and result["plan"]["action"] == "upgrade"
    assert "driver.version" in result["plan"]["values_changed"]
    assert len(writes(log)) == before
    values_diff, manifest_diff = result["diff"]
    assert "1.2.3" in values_diff["after"] and "1.2.3" not in values_diff["before"]
    assert "v26.3.3" in manifest_diff["after"] and "v25.10.1" in manifest_diff["before"]


def test_an_unsupported_jump_is_refused_before_any_write(bed):
    log = bed[0]
    run(bed)
    before = len(writes(log))
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.7.0")
    assert "skips the major release(s) 26.3" in exc.value.msg and exc.value.details["refused"] is True
    assert len(writes(log)) == before


def test_an_existing_release_without_an_apply_method_is_upgraded_client_side(bed):
    _log, helm, _kube = bed
    run(bed)
    seen = {}
    original = helm.upgrade

    def upgrade(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    helm.upgrade = upgrade
    run(bed, chart_version="v26.3.3")
    assert seen["apply_method"] == "csa"  # what helm v3 wrote; helm v4 keeps it, so no --force-conflicts


def test_a_downgrade_is_refused_without_force_and_done_with_it(bed):
    run(bed, chart_version="v26.3.3")
    with pytest.raises(ReleaseError, match="downgrade"):
        run(bed, chart_version="v25.10.1")
    assert run(bed, chart_version="v25.10.1", force=True)["release"]["chart_version"] == "v25.10.1"


def test_a_forced_downgrade_is_a_warning_for_the_module_never_a_result_key(bed):
    _log, helm, kube = bed
    run(bed, chart_version="v26.3.3")
    rel = release(bed, chart_version="v25.10.1", force=True)
    result = rel.run()
    assert rel.warnings[0] == "downgrading v26.3.3 -> v25.10.1 because force is set"
    assert "warnings" not in result
    run(bed, chart_version="v26.3.3")
    helm.fail_upgrade = ("boom", True)
    rel = release(bed, chart_version="v25.10.1", force=True)
    with pytest.raises(ReleaseError) as exc:
        rel.run()
    assert rel.warnings and "warnings" not in exc.value.details


# --- CRDs older than the cluster's ---------------------------------------------------------------------------


def test_installing_older_crds_over_newer_ones_is_refused_with_the_count_in_check_mode_too(bed):
    log, _helm, kube = bed
    kube.crds[CP] = copy.deepcopy(NEW_CP)  # left by a newer chart
    for check_mode in (True, False):
        with pytest.raises(ReleaseError) as exc:
            run(bed, check_mode=check_mode)
        assert "would drop 2 field(s)" in exc.value.msg and "clusterpolicies.nvidia.com: 2" in exc.value.msg
        assert exc.value.details["refused"] is True
        assert exc.value.details["crd_changes"][0]["fields_removed"] == [
            "v1:spec.sandboxWorkloads",
            "v1:spec.sandboxWorkloads.mode",
        ]
    assert writes(log) == []


def test_force_applies_older_crds_and_warns_with_the_count(bed):
    rel = release(bed, force=True)
    bed[2].crds[CP] = copy.deepcopy(NEW_CP)
    result = rel.run()
    assert result["crds_applied"] == [CP]
    assert any("drops 2 field(s)" in w and "because force is set" in w for w in rel.warnings)


# --- failures, by what helm wrote ----------------------------------------------------------------------------


def test_a_chart_that_does_not_render_changes_nothing_and_says_so_in_check_mode_too(bed):
    log = bed[0]
    run(bed)
    before = writes(log)
    bad = {"cdi": {"enabled": False, "nriPluginEnabled": True}}
    for check_mode in (True, False):
        with pytest.raises(ReleaseError) as exc:
            run(bed, check_mode=check_mode, chart_version="v26.3.3", values=bad)
        msg = exc.value.msg
        assert "chart v26.3.3 does not render with these values" in msg and "nothing was changed" in msg
        assert (
            "revision 1 (chart v25.10.1) is still deployed" in msg and "cdi.nriPluginEnabled needs cdi.enabled" in msg
        )
        assert exc.value.details["changed"] is False and exc.value.details["revision_written"] is False
    assert writes(log) == before  # no CRD applied, no helm write
    assert history(bed) == [(1, "deployed", "v25.10.1")]


def failing_update(bed, message, writes_revision, **kw):
    """v25.10.1 (revision 1) upgraded to v26.3.3 (revision 2); then an update whose helm write fails with ``message``,
    before or after helm wrote revision 3. Returns the ReleaseError."""
    run(bed)
    run(bed, chart_version="v26.3.3")
    bed[1].fail_upgrade = (message, writes_revision)
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3", values={"driver": {"version": "580.126.21"}}, **kw)
    return exc.value


def test_a_failure_before_helm_writes_a_revision_rolls_nothing_back(bed):
    """The bug this guards: the current revision was taken for the failed one and the release went one back."""
    exc = failing_update(bed, 'rendered manifests contain a resource that already exists; Service "x" ...', False)
    assert "helm upgrade to chart v26.3.3 failed before helm wrote a release revision" in exc.msg
    assert "the release is unchanged and revision 2 (chart v26.3.3) is still deployed" in exc.msg
    assert "already exists" in exc.msg
    assert exc.details["rolled_back"] is False and exc.details["changed"] is False
    assert not [e for e in bed[0] if e[0] == "helm rollback"]
    assert history(bed) == [(1, "superseded", "v25.10.1"), (2, "deployed", "v26.3.3")]


def test_a_failure_before_a_revision_names_the_crds_it_applied_first(bed):
    _log, helm, kube = bed
    run(bed)
    kube.crds[CP] = copy.deepcopy(OLD_CP)
    helm.fail_upgrade = ("unable to build kubernetes objects from new release manifest", False)
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3")
    assert "The CRDs applied before it stay: clusterpolicies.nvidia.com" in exc.value.msg
    assert exc.value.details["changed"] is True


def test_a_failure_after_helm_wrote_a_revision_rolls_back_to_the_revision_deployed_before_this_run(bed):
    exc = failing_update(bed, "UPGRADE FAILED: context deadline exceeded", True)
    assert "helm upgrade to chart v26.3.3 wrote revision 3 and failed" in exc.msg
    assert "context deadline exceeded" in exc.msg
    assert "rolled back to revision 2 (chart v26.3.3), the revision deployed before this run" in exc.msg
    assert "it is now revision 4" in exc.msg
    assert bed[0][-1] == ("helm rollback", 2)
    details = exc.details
    assert (details["rolled_back"], details["rollback_error"], details["rollback_revision"]) == (True, None, 2)
    assert (details["failed_revision"], details["changed"]) == (3, True)
    assert history(bed) == [
        (1, "superseded", "v25.10.1"),
        (2, "superseded", "v26.3.3"),
        (3, "failed", "v26.3.3"),
        (4, "deployed", "v26.3.3"),
    ]


def test_a_failed_upgrade_goes_back_to_the_chart_that_ran_before(bed):
    log, helm, _kube = bed
    run(bed)
    helm.fail_upgrade = ("ClusterPolicy is invalid: spec.mig.strategy: Unsupported value", True)
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3")
    assert "rolled back to revision 1 (chart v25.10.1)" in exc.value.msg and "Unsupported value" in exc.value.msg
    assert log[-1] == ("helm rollback", 1)
    assert helm.release("gpu-operator", "gpu-operator")["chart_version"] == "v25.10.1"


def test_without_rollback_on_failure_the_failed_revision_stays_and_the_message_says_how_back(bed):
    log, helm, _kube = bed
    run(bed)
    helm.fail_upgrade = ("UPGRADE FAILED: context deadline exceeded", True)
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3", rollback_on_failure=False)
    msg = exc.value.msg
    assert "rollback_on_failure is false, so the release stays at revision 2 (failed)" in msg
    assert "revision 1 (chart v25.10.1) was deployed before this run" in msg
    assert "helm rollback gpu-operator 1 -n gpu-operator" in msg
    assert exc.value.details["rolled_back"] is False and not [e for e in log if e[0] == "helm rollback"]


def test_a_failed_rollback_reports_both_errors(bed):
    _log, helm, _kube = bed
    run(bed)
    helm.fail_upgrade, helm.fail_rollback = ("upgrade boom", True), "rollback boom"
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3")
    assert "upgrade boom" in exc.value.msg and "rollback boom" in exc.value.msg
    assert "Rolling back to revision 1 (chart v25.10.1)" in exc.value.msg
    assert exc.value.details["rollback_error"] == "rollback boom"


def test_a_failed_first_install_has_nothing_to_roll_back_and_says_so(bed):
    bed[1].fail_upgrade = ("boom", True)
    with pytest.raises(ReleaseError) as exc:
        run(bed)
    assert "helm install of chart v25.10.1 wrote revision 1 and failed: boom" in exc.value.msg
    assert "No revision was deployed before this run" in exc.value.msg
    bed[1].history_list = []
    bed[1].fail_upgrade = ("boom", False)
    with pytest.raises(ReleaseError, match="before helm wrote a release revision.*no release was created"):
        run(bed)


# --- readiness ----------------------------------------------------------------------------------------------


def test_not_ready_after_the_wait_reports_conditions_and_operands_per_node(bed):
    kube = bed[2]
    kube.policies = [policy("notReady")]
    kube.pods = [driver_pod("gpu-0", "580.105.08-ubuntu22.04", ready=False)]
    with pytest.raises(ReleaseError) as exc:
        run(bed, ready_timeout=30)
    assert "DriverNotReady" in exc.value.msg and "gpu-0: driver not ready" in exc.value.msg
    ready = exc.value.details["readiness"]
    assert ready["not_ready_operands"] == {"gpu-0": ["driver"]} and ready["state"] == "notReady"


def test_ready_returns_the_readiness(bed):
    result = run(bed, ready_timeout=30)
    assert result["readiness"]["ready"] is True and result["readiness"]["state"] == "ready"
    assert result["readiness"]["stale"] == [] and result["readiness"]["observed_generation"] == 1


def test_a_ready_status_from_before_the_change_does_not_count_until_the_operator_observed_the_spec(bed):
    kube = bed[2]
    stale = policy(generation=2, status_observed=1)
    kube.policies = [stale, stale, stale, policy(generation=2, status_observed=2)]
    result = run(bed, ready_timeout=100)
    assert result["readiness"]["ready"] is True and result["readiness"]["observed_generation"] == 2
    assert result["readiness"]["waited_s"] > 0

    kube.policies = [stale]
    with pytest.raises(ReleaseError) as exc:
        run(bed, ready_timeout=30, values={"driver": {"version": "580.105.09"}})
    assert "(state ready)" in exc.value.msg
    assert "ClusterPolicy cluster-policy: the operator has observed generation 1" in exc.value.msg
    assert "the spec is at generation 2" in exc.value.msg
    assert exc.value.details["readiness"]["stale"]


def test_the_ready_condition_s_observed_generation_counts_where_the_status_has_none():
    stale = policy(generation=3, status_observed=None, condition_observed=2)
    assert observed_generation(stale) == (2, "the Ready condition's observedGeneration")
    assert "observed generation 2" in stale_status("ClusterPolicy", stale)
    assert stale_status("ClusterPolicy", policy(generation=3, status_observed=None, condition_observed=3)) is None


def test_without_any_observed_generation_the_driver_pods_must_run_the_spec_s_version():
    cp = policy(generation=4, status_observed=None, driver_version="595.91.07")
    nodes = [gpu_node("gpu-0"), gpu_node("gpu-1"), gpu_node("gpu-2", **{"nvidia.com/gpu-driver-upgrade.skip": "true"})]
    pods = [
        driver_pod("gpu-0", "595.91.07-ubuntu22.04"),
        driver_pod("gpu-1", "580.126.20-ubuntu22.04"),
        driver_pod("gpu-2", "580.126.20-ubuntu22.04"),  # held back by the skip label: not waited for
    ]
    assert stale_status("ClusterPolicy", cp, pods, nodes) == (
        "ClusterPolicy cluster-policy carries no observedGeneration and the driver pods do not run 595.91.07 yet: "
        "gpu-1 (580.126.20-ubuntu22.04)"
    )
    pods[1] = driver_pod("gpu-1", "595.91.07-ubuntu22.04")
    assert stale_status("ClusterPolicy", cp, pods, nodes) is None


# --- absent -------------------------------------------------------------------------------------------------


def test_absent_removes_the_release_and_keeps_crds_unless_asked(bed):
    log, _helm, kube = bed
    run(bed)
    result = run(bed, state="absent")
    assert result["changed"] and result["crds_removed"] == []
    assert CP in kube.crds
    assert run(bed, state="absent")["changed"] is False
    run(bed)
    result = run(bed, state="absent", remove_crds=True)
    assert result["crds_removed"] == [CP] and not kube.crds
    assert ("delete", CP) in log


def test_remove_crds_leaves_a_disabled_subchart_s_crds_and_another_owner_s_alone_and_says_so(bed):
    log, _helm, kube = bed
    run(bed)
    kube.crds[NFD] = crd(NFD, {}, group="nfd.k8s-sigs.io")  # the cluster's own NFD
    kube.crds[CP]["metadata"]["managedFields"] = managed(("argocd-controller", "Apply", True, {}))
    rel = release(bed, state="absent", remove_crds=True)
    result = rel.run()
    assert result["crds_removed"] == []
    assert result["crds_left"] == [
        {"name": CP, "reason": "another owner manages it: spec fields managed by argocd-controller"},
        {"name": NFD, "reason": "disabled by nfd.enabled=false"},
    ]
    assert rel.warnings == [
        "remove_crds left these CRDs alone: clusterpolicies.nvidia.com (another owner manages it: spec fields "
        "managed by argocd-controller); nodefeaturerules.nfd.k8s-sigs.io (disabled by nfd.enabled=false)"
    ]
    assert not [e for e in log if e[0] == "delete"] and set(kube.crds) == {CP, NFD}


def test_remove_crds_without_a_release_uses_the_values_a_present_run_would(bed):
    kube = bed[2]
    kube.crds = {CP: copy.deepcopy(OLD_CP), NFD: crd(NFD, {}, group="nfd.k8s-sigs.io")}
    result = run(bed, state="absent", remove_crds=True)  # the nodes carry NFD labels: nfd.enabled=false
    assert result["crds_removed"] == [CP] and set(kube.crds) == {NFD}


def test_absent_in_check_mode_writes_nothing(bed):
    run(bed)
    before = len(writes(bed[0]))
    assert run(bed, state="absent", check_mode=True, remove_crds=True)["changed"] is True
    assert len(writes(bed[0])) == before


def test_an_unknown_version_names_it(bed):
    with pytest.raises(ReleaseError, match="chart version v9.9.9"):
        run(bed, chart_version="v9.9.9")


def test_values_files_merge_in_order_below_values(tmp_path):
    a, b = tmp_path / "a.yml", tmp_path / "b.yml"
    a.write_text("driver: {version: '1', enabled: true}\n")
    b.write_text("driver: {version: '2'}\n")
    p = params(values_files=[str(a), str(b)], values={"mig": {"strategy": "mixed"}})
    assert p.user_values() == {"driver": {"version": "2", "enabled": True}, "mig": {"strategy": "mixed"}}
    bad = tmp_path / "bad.yml"
    bad.write_text("- a list\n")
    with pytest.raises(ReleaseError, match="bad.yml is not a mapping"):
        params(values_files=[str(bad)]).user_values()


# --- a failed uninstall -----------------------------------------------------------------------------------------


def test_a_failed_uninstall_that_deleted_objects_reports_changed_and_lists_what_remains(bed):
    log, helm, kube = bed
    run(bed)
    helm.get_manifest = lambda name, ns: (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu-operator, namespace: gpu-operator}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: not-ours}\n"
    )
    helm.get_hooks = lambda name, ns: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nfd-prune}\n"
    kube.objects["/api/v1/namespaces/gpu-operator/serviceaccounts/nfd-prune"] = {"metadata": {"name": "nfd-prune"}}
    kube.objects["/api/v1/nodes/not-ours"] = {"metadata": {"name": "not-ours"}}
    helm.fail_uninstall = ("post-delete hook failed: forbidden", "uninstalling")
    with pytest.raises(ReleaseError, match="helm uninstall failed after deleting 1 of the release's 2 object") as err:
        run(bed, state="absent")
    assert err.value.details["changed"] is True
    assert err.value.details["remaining"] == ["Node not-ours", "ServiceAccount gpu-operator/nfd-prune"]
    assert "post-delete hook failed" in err.value.msg and ("helm uninstall", "gpu-operator") in log


def test_a_failed_uninstall_that_deleted_nothing_reports_unchanged(bed):
    _log, helm, kube = bed
    run(bed)
    helm.get_manifest = lambda name, ns: "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-0}\n"
    kube.objects["/api/v1/nodes/gpu-0"] = {"metadata": {"name": "gpu-0"}}
    helm.fail_uninstall = ("pre-delete hook failed", "deployed")
    with pytest.raises(ReleaseError) as err:
        run(bed, state="absent")
    assert err.value.details["changed"] is False and err.value.details["remaining"] == ["Node gpu-0"]
