"""Specification of plugins/module_utils/_operator/release/: gates, CRD plan, idempotence, check mode, rollback,
readiness. Helm and the API server are in-memory stand-ins (no cluster)."""

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
    schema_fields,
    value_changes,
    version_gate,
)


def crd(name, spec_props):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": "nvidia.com", "versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]},
    }


OLD_CP = crd("clusterpolicies.nvidia.com", {"driver": {"type": "object"}})
NEW_CP = crd(
    "clusterpolicies.nvidia.com",
    {"driver": {"type": "object"}, "sandboxWorkloads": {"type": "object", "properties": {"mode": {"type": "string"}}}},
)
CHARTS = {
    "v25.10.1": {"values": {"driver": {"version": "580.105.08"}}, "crds": [OLD_CP]},
    "v26.3.3": {"values": {"driver": {"version": "580.126.20"}}, "crds": [NEW_CP]},
    "v26.7.0": {"values": {"driver": {"version": "595.91.07"}}, "crds": [NEW_CP]},
}


class FakeHelm:
    """Releases and charts in memory; records writes in ``self.writes``."""

    major = 4

    def __init__(self, log, fail_upgrade=None, fail_rollback=None):
        self.log, self.fail_upgrade, self.fail_rollback = log, fail_upgrade, fail_rollback
        self.history_list = []  # dicts revision/status/version/values
        self.tmpdir = None

    # reads
    def show_chart(self, chart, version):
        version = version or "v26.7.0"
        if version not in CHARTS:
            raise HelmError("chart version %s of %s was not found" % (version, chart.describe()))
        return {"version": version, "appVersion": version}

    def show_values(self, chart, version):
        return copy.deepcopy(CHARTS[version]["values"])

    def show_crds(self, chart, version):
        return copy.deepcopy(CHARTS[version]["crds"])

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

    def get_values(self, name, ns, revision=None):
        return copy.deepcopy(self._current()["values"])

    def history(self, name, ns):
        return [{"revision": h["revision"], "status": h["status"]} for h in self.history_list]

    def get_manifest(self, name, ns):
        return "kind: ClusterPolicy # %s\n" % self._current()["version"]

    def template(self, name, ns, chart, version, values_file):
        return "kind: ClusterPolicy # %s\n" % version

    def run(self, args, **kwargs):
        return 0, "[]", ""

    # writes
    def upgrade(self, name, ns, chart, version, values_file, **kwargs):
        with open(values_file) as f:
            values = yaml.safe_load(f)
        self.log.append(("helm upgrade", version))
        for h in self.history_list:
            if h["status"] == "deployed":
                h["status"] = "superseded"
        rev = len(self.history_list) + 1
        failed = self.fail_upgrade is not None
        self.history_list.append(
            {"revision": rev, "status": "failed" if failed else "deployed", "version": version, "values": values}
        )
        if failed:
            raise HelmError(self.fail_upgrade)

    def rollback(self, name, ns, revision, apply_method=None, **kwargs):
        self.log.append(("helm rollback", revision))
        if self.fail_rollback:
            raise HelmError(self.fail_rollback)
        old = [h for h in self.history_list if h["revision"] == revision][0]
        self.history_list.append(dict(old, revision=len(self.history_list) + 1, status="deployed"))

    def uninstall(self, name, ns, **kwargs):
        self.log.append(("helm uninstall", name))
        self.history_list = []


class FakeKube:
    def __init__(self, log, crds=(), nodes=(), policy_state="ready"):
        self.log = log
        self.crds = {c["metadata"]["name"]: copy.deepcopy(c) for c in crds}
        self.nodes = list(nodes)
        self.policy_state = policy_state

    def get_or_none(self, path, what=None):
        return copy.deepcopy(self.crds.get(path.rsplit("/", 1)[1]))

    def server_side_apply(self, path, body, field_manager, force=False, what=None, dry_run=False):
        self.log.append(("apply", path.rsplit("/", 1)[1], field_manager, force))
        self.crds[body["metadata"]["name"]] = copy.deepcopy(body)

    def delete_path(self, path, what=None):
        self.log.append(("delete", path.rsplit("/", 1)[1]))
        return self.crds.pop(path.rsplit("/", 1)[1], None) is not None

    def list_core(self, resource, namespace=None, **kw):
        if resource == "nodes":
            return copy.deepcopy(self.nodes)
        return [
            {
                "metadata": {"name": "nvidia-driver-daemonset-x", "labels": {"app": "nvidia-driver-daemonset"}},
                "spec": {"nodeName": "gpu-0"},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
            }
        ]

    def list_custom(self, group, version, plural, **kw):
        if plural == "clusterpolicies":
            cond = [
                {"type": "Ready", "status": "False", "reason": "DriverNotReady", "message": "driver pods not ready"}
            ]
            return [
                {
                    "metadata": {"name": "cluster-policy"},
                    "spec": {},
                    "status": {"state": self.policy_state, "conditions": cond},
                }
            ]
        return []


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


def gpu_node(name="gpu-0"):
    return {
        "metadata": {
            "name": name,
            "labels": {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"},
        }
    }


@pytest.fixture
def bed(tmp_path):
    log = []
    h = FakeHelm(log)
    h.tmpdir = str(tmp_path)
    return log, h, FakeKube(log, nodes=[gpu_node()])


def run(bed, check_mode=False, diff=False, **kw):
    log, helm, kube = bed
    return OperatorRelease(params(**kw), helm, kube, check_mode=check_mode, diff=diff, sleep=lambda s: None).run()


def writes(log):
    return [e for e in log if e[0] in ("apply", "delete") or e[0].startswith("helm")]


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


# --- CRD and values plans -----------------------------------------------------------------------------------


def test_crd_changes_name_the_added_fields():
    [change] = crd_changes([NEW_CP], {"clusterpolicies.nvidia.com": OLD_CP})
    assert change["action"] == "update"
    assert change["fields_added"] == ["v1:spec.sandboxWorkloads", "v1:spec.sandboxWorkloads.mode"]
    assert crd_changes([NEW_CP], {})[0]["action"] == "create"
    assert crd_changes([NEW_CP], {"clusterpolicies.nvidia.com": NEW_CP})[0]["action"] == "none"


def test_schema_fields_walk_arrays():
    schema = {"properties": {"t": {"type": "array", "items": {"properties": {"key": {}}}}}}
    assert schema_fields(schema) == {"t", "t[].key"}


def test_value_changes_list_dotted_paths():
    assert value_changes({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}, "d": 0}) == ["a.c", "d"]


# --- the life cycle -----------------------------------------------------------------------------------------


def test_fresh_install_applies_crds_first_then_one_helm_write(bed):
    log = bed[0]
    result = run(bed)
    assert result["changed"] and result["plan"]["action"] == "install"
    assert writes(log) == [
        ("apply", "clusterpolicies.nvidia.com", "gpuops-gpu-operator", True),
        ("helm upgrade", "v25.10.1"),
    ]
    assert result["release"]["chart_version"] == "v25.10.1"
    # the cluster has NFD labels and no ServiceMonitor CRD: both synthesised, and returned
    assert result["values"]["nfd"] == {"enabled": False}
    assert result["values"]["dcgmExporter"]["serviceMonitor"]["enabled"] is False


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
    kube.crds["clusterpolicies.nvidia.com"] = copy.deepcopy(OLD_CP)
    result = run(bed, chart_version="v26.3.3")
    plan = result["plan"]
    assert (plan["action"], plan["from_version"], plan["to_version"]) == ("upgrade", "v25.10.1", "v26.3.3")
    assert "v1:spec.sandboxWorkloads.mode" in plan["crd_changes"][0]["fields_added"]
    assert writes(log)[-2:] == [
        ("apply", "clusterpolicies.nvidia.com", "gpuops-gpu-operator", True),
        ("helm upgrade", "v26.3.3"),
    ]


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
    release = OperatorRelease(params(chart_version="v25.10.1", force=True), helm, kube, sleep=lambda s: None)
    result = release.run()
    assert release.warnings == ["downgrading v26.3.3 -> v25.10.1 because force is set"]
    assert "warnings" not in result
    run(bed, chart_version="v26.3.3")
    helm.fail_upgrade = "boom"
    release = OperatorRelease(params(chart_version="v25.10.1", force=True), helm, kube, sleep=lambda s: None)
    with pytest.raises(ReleaseError) as exc:
        release.run()
    assert release.warnings and "warnings" not in exc.value.details


def test_a_failed_upgrade_rolls_back_and_reports_both(bed):
    log, helm, _kube = bed
    run(bed)
    helm.fail_upgrade = "ClusterPolicy is invalid: spec.mig.strategy: Unsupported value"
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3")
    assert "rolled back to revision 1" in exc.value.msg and "Unsupported value" in exc.value.msg
    assert exc.value.details["rolled_back"] is True and exc.value.details["rollback_error"] is None
    assert log[-1] == ("helm rollback", 1)
    assert helm.release("gpu-operator", "gpu-operator")["chart_version"] == "v25.10.1"


def test_a_failed_rollback_reports_both_errors(bed):
    _log, helm, _kube = bed
    run(bed)
    helm.fail_upgrade, helm.fail_rollback = "upgrade boom", "rollback boom"
    with pytest.raises(ReleaseError) as exc:
        run(bed, chart_version="v26.3.3")
    assert "upgrade boom" in exc.value.msg and "rollback boom" in exc.value.msg
    assert exc.value.details["rollback_error"] == "rollback boom"


def test_a_failed_first_install_has_nothing_to_roll_back_and_says_so(bed):
    bed[1].fail_upgrade = "boom"
    with pytest.raises(ReleaseError, match="no earlier revision"):
        run(bed)


def test_not_ready_after_the_wait_reports_conditions_and_operands_per_node(bed):
    bed[2].policy_state = "notReady"
    clock = iter(range(0, 1000, 10))
    _log, helm, kube = bed
    rel = OperatorRelease(params(ready_timeout=30), helm, kube, sleep=lambda s: None, clock=lambda: next(clock))
    with pytest.raises(ReleaseError) as exc:
        rel.run()
    assert "DriverNotReady" in exc.value.msg and "gpu-0: driver not ready" in exc.value.msg
    ready = exc.value.details["readiness"]
    assert ready["not_ready_operands"] == {"gpu-0": ["driver"]} and ready["state"] == "notReady"


def test_ready_returns_the_readiness(bed):
    result = run(bed, ready_timeout=30)
    assert result["readiness"]["ready"] is True and result["readiness"]["state"] == "ready"


def test_absent_removes_the_release_and_keeps_crds_unless_asked(bed):
    log, _helm, kube = bed
    run(bed)
    result = run(bed, state="absent")
    assert result["changed"] and result["crds_removed"] == []
    assert "clusterpolicies.nvidia.com" in kube.crds
    assert run(bed, state="absent")["changed"] is False
    run(bed)
    result = run(bed, state="absent", remove_crds=True)
    assert result["crds_removed"] == ["clusterpolicies.nvidia.com"] and not kube.crds
    assert ("delete", "clusterpolicies.nvidia.com") in log


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
