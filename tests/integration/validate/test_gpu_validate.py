"""gpu_validate on the test bed with the simulated GPU Operator: every injected fault is reported at its layer.

Each spec injects faults on distinct nodes (node annotation sim.gpuops.io/fault, or a label/taint a person would
set), waits for the documented symptom, runs the tests' site play (NVML facts from the fake NVML library, then the
role as the least-privilege identity), and reads the JSON report. The fixture heals the nodes afterwards.
"""

from __future__ import annotations

import datetime
import pathlib

import pytest
from validate_helpers import Validate

from tests.integration.simop_helpers import wait_for
from tests.integration.workflows import Workflows
from tests.sim import remediation
from tests.sim.operator import prometheus

DEPLOY_DCGM = "nvidia.com/gpu.deploy.dcgm-exporter"


def assert_one_judgement(bed, work, rows, expected, skip=()):
    """Node triage (given each host's NVML facts) and the audit name the same first ``(layer, code)`` of each node
    in ``expected`` as the validation report's ``rows``, and no failure on the other GPU nodes of ``rows`` (but those
    in ``skip``): one judgement of a node."""
    expected = {n: expected.get(n, (None, None)) for n in rows if n not in skip}
    Workflows(bed, work).assert_judged_alike(rows, expected)


@pytest.fixture
def nodes(gpu_operator):
    """(two MIG-capable H100 nodes, the T4 node) of the ci profile; healed and healthy again afterwards."""
    op = gpu_operator
    op.wait_healthy(timeout=120)
    mig = sorted(n for n in op.gpu_nodes if op.node(n).metadata.labels.get("nvidia.com/mig.capable") == "true")
    other = sorted(set(op.gpu_nodes) - set(mig))
    assert len(mig) >= 2 and other, "ci profile: two MIG-capable H100 nodes and a T4 node"
    yield mig[0], mig[1], other[0]
    for n in op.gpu_nodes:
        op.fault(n, None)
        op.core.patch_node(
            n,
            {
                "metadata": {"labels": {DEPLOY_DCGM: "true", "nvidia.com/mig.config": "all-disabled"}},
                "spec": {"taints": None},
            },
        )
    wait_for(
        lambda: all(op.node(n).metadata.labels.get("nvidia.com/mig.config.state") == "success" for n in mig),
        60,
        what="MIG reset",
    )
    op.wait_healthy(timeout=120)


def _crashloop(op, node, selector):
    for p in op.pods(selector=selector, node=node):
        for cs in p.status.container_statuses or []:
            if cs.state.waiting and cs.state.waiting.reason == "CrashLoopBackOff":
                return True
    return False


def _waiting(op, node, app, reason):
    return any(
        cs.state.waiting and cs.state.waiting.reason == reason
        for p in op.pods(app=app, node=node)
        for cs in p.status.container_statuses or []
    )


def test_a_healthy_cluster_passes_every_node_and_reports_in_json_and_markdown(validate, gpu_operator, nodes):
    rc, report, out = validate.run()
    assert rc == 0, out[-3000:]
    assert report["failed"] == 0 and report["passed"] == len(gpu_operator.gpu_nodes)
    assert report["toolkit_mode"] == "runtime-handler"
    for row in report["rows"]:
        assert row["verdict"] == "pass", row
        assert row["checks"] == {
            "host": "pass",
            "node": "pass",
            "upgrade": "pass",
            "labels": "pass",
            "allocatable": "pass",
            "operands": "pass",
            "dra-plugin": "skipped",
            "dra-slices": "skipped",
            "dra-devices": "skipped",
            "dra-taints": "skipped",
            "mig": "skipped",
            "smoke": "pass",
            "monitoring": "pass",
        }
        assert row["smoke"]["status"] == "passed"
    text = (validate.workdir / ("run-%d" % validate.runs) / "gpu-validate.md").read_text()
    assert "**%d passed, 0 failed**" % len(gpu_operator.gpu_nodes) in text
    assert "%d passed, 0 failed" % len(gpu_operator.gpu_nodes) in out


def test_the_wait_counts_every_gpu_node_from_the_compact_result_and_stops_when_all_are_ready(
    validate, gpu_operator, nodes
):
    # the wait polls gpu_cluster_info with node_detail=problems: the line counts the nodes of its node_summary
    rc, _report, out = validate.run(
        gpu_validate_wait_seconds=30, gpu_validate_smoke_test=False, gpu_validate_fail_on="never"
    )
    assert rc == 0, out[-3000:]
    total = len(gpu_operator.gpu_nodes)
    assert "(item=0 s: %d/%d GPU nodes ready)" % (total, total) in out, out[-3000:]
    assert "(item=10 s:" not in out, "the loop stops at the first poll that finds every node ready"


def test_driver_toolkit_and_device_plugin_faults_are_named_with_evidence_and_fail_the_play(
    validate, gpu_operator, nodes, tmp_path
):
    op = gpu_operator
    a, b, t4 = nodes
    op.fault(a, "driver-crash-kernel-headers")
    op.fault(b, "toolkit-no-runtime")
    op.fault(t4, "device-plugin-not-advertising")
    wait_for(lambda: _crashloop(op, a, "app.kubernetes.io/component=nvidia-driver"), 60, what="driver CrashLoopBackOff")
    wait_for(lambda: _waiting(op, b, "nvidia-device-plugin-daemonset", "ContainerCreating"), 60, what="plugin stuck")
    wait_for(lambda: op.alloc(t4) == "0", 60, what="t4 advertises nothing")
    rc, report, out = validate.run()
    assert rc != 0, "gpu_validate_fail_on=any fails the play"
    assert "3 GPU node(s) failed validation" in out
    assert Validate.layers(report) == {a: "driver", b: "toolkit", t4: "device-plugin"}
    rows = Validate.rows(report)
    assert any("Could not resolve Linux kernel version" in e for e in rows[a]["evidence"])
    assert any('no runtime for "nvidia"' in e for e in rows[b]["evidence"])
    assert any("nvidia.com/gpu=0 but NVML counts 1 GPUs" in e for e in rows[t4]["evidence"])
    # the lower layers' symptoms further up are findings too, but the verdict is the lowest layer
    assert "scheduling" in {f["layer"] for f in rows[a]["findings"]}
    assert_one_judgement(
        gpu_operator.bed,
        tmp_path,
        rows,
        {
            a: ("driver", "DriverCrashLoop"),
            b: ("toolkit", "RuntimeNotConfigured"),
            t4: ("device-plugin", "DevicePluginNotAdvertising"),
        },
    )
    rc, _report, out = validate.run(gpu_validate_fail_on="layers", gpu_validate_fail_on_layers=["monitoring"])
    assert rc == 0, out[-3000:]


def test_xid_validator_and_untolerated_taint_are_gpu_health_driver_and_scheduling(
    validate, gpu_operator, nodes, tmp_path
):
    op = gpu_operator
    a, b, t4 = nodes
    op.fault(a, "xid79")
    op.fault(b, "validator-failing")
    op.core.patch_node(t4, {"spec": {"taints": [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]}})
    wait_for(lambda: op.alloc(a) == str(op.gpu_nodes[a].count - 1), 60, what="xid79 drops a GPU")
    wait_for(lambda: _crashloop(op, b, "app=nvidia-operator-validator"), 60, what="validator CrashLoopBackOff")
    rc, report, out = validate.run(gpu_validate_fail_on="never")
    assert rc == 0, out[-3000:]
    assert Validate.layers(report) == {a: "gpu-health", b: "driver", t4: "scheduling"}
    rows = Validate.rows(report)
    assert any("unhealthy" in e for e in rows[a]["evidence"])
    assert any("driver-validation" in e for e in rows[b]["evidence"])
    assert any("had untolerated taint" in e for e in rows[t4]["evidence"])
    # the t4's untolerated taint is the smoke pod's finding (about a pod), not the node's judgement
    judged = {a: ("gpu-health", "UnhealthyGPUs"), b: ("driver", "ValidatorFailing")}
    assert_one_judgement(gpu_operator.bed, tmp_path, rows, judged, skip=[t4])


def test_a_node_a_remediation_system_quarantined_is_named_quarantined_with_its_owner_not_a_failure(
    validate, gpu_operator, nodes
):
    a, _b, _t4 = nodes
    remediation.quarantine(gpu_operator.core, a)
    try:
        rc, report, out = validate.run(gpu_validate_fail_on="any")
        assert rc == 0, out[-3000:]  # its owner acts on it: not a failure of the play
        row = Validate.rows(report)[a]
        assert row["verdict"] == "quarantined" and row["failing_layer"] is None
        assert row["quarantine"]["owners"] == ["NVSentinel"]
        kinds = {e["kind"]: e["key"] for e in row["quarantine"]["evidence"]}
        assert kinds["taint"] == remediation.TAINT["key"] and kinds["condition"] == remediation.CONDITION
        assert "NVSentinel owns the node" in row["quarantine"]["fix"]
        assert row["smoke"] is None or row["smoke"]["reason"] == "not run"  # no smoke pod on a node it holds
        assert report["quarantined"] == 1 and report["failed"] == 0
        assert "QUARANTINED %s by NVSentinel: annotation quarantineHealthEvent" % a in out
    finally:
        remediation.release(gpu_operator.core, a)


def test_mig_failure_and_missing_exporter_are_mig_and_monitoring(validate, gpu_operator, nodes):
    op = gpu_operator
    a, b, t4 = nodes
    op.label(b, **{"nvidia.com/mig.config": "all-1g.10gb"})
    op.fault(a, "mig-failed")
    op.label(a, **{"nvidia.com/mig.config": "all-1g.10gb"})
    op.label(t4, **{DEPLOY_DCGM: "false"})
    label = "nvidia.com/mig.config.state"
    wait_for(lambda: op.node(a).metadata.labels.get(label) == "failed", 30, what="MIG failed")
    wait_for(lambda: op.node(b).metadata.labels.get(label) == "success", 30, what="MIG applied")
    wait_for(lambda: op.alloc(b) == str(7 * op.gpu_nodes[b].count), 30, what="MIG slices advertised")
    wait_for(lambda: not op.pods(app="nvidia-dcgm-exporter", node=t4), 60, what="no exporter on the t4 node")
    rc, report, out = validate.run(gpu_validate_fail_on="never")
    assert rc == 0, out[-3000:]
    assert Validate.layers(report) == {a: "mig", b: None, t4: "monitoring"}
    rows = Validate.rows(report)
    assert rows[b]["checks"]["mig"] == "pass" and rows[b]["checks"]["allocatable"] == "skipped"
    # the MIG manager retries a failed config, so the state seen may be failed or pending again
    assert any("mig.config=all-1g.10gb but nvidia.com/mig.config.state=" in e for e in rows[a]["evidence"])
    assert rows[t4]["evidence"] == ["no nvidia-dcgm-exporter pod on this node"]


def test_a_failing_gpu_workload_is_the_workload_layer(validate, gpu_operator, nodes):
    rc, report, _out = validate.run(
        gpu_validate_fail_on="never", gpu_validate_smoke_pod_labels={"gpuops.io/smoke-test-result": "failed"}
    )
    assert rc == 0
    assert set(Validate.layers(report).values()) == {"workload"}
    assert all("exit code 1" in r["evidence"][0] for r in report["rows"])


def test_dcgm_metrics_in_a_real_prometheus(validate, gpu_operator, nodes, tmp_path):
    op = gpu_operator
    a, _b, t4 = nodes
    try:
        prometheus.find_binary()
    except RuntimeError as exc:
        pytest.fail(f"{exc} (`make integration` installs it)")
    url = pathlib.Path(op.state_dir, "dcgm-exporter.url").read_text().strip()
    prom = prometheus.start(tmp_path / "prom", [prometheus.target_from_url(url)])
    try:
        want = sum(g.count for g in op.gpu_nodes.values())
        wait_for(lambda: len(prom.query("DCGM_FI_DEV_GPU_UTIL")) == want, 30, interval=0.5, what="every GPU scraped")
        rc, report, out = validate.run(gpu_validate_prometheus_url=prom.url)
        assert rc == 0, out[-3000:]
        assert all(r["checks"]["monitoring"] == "pass" for r in report["rows"])

        op.fault(a, "xid79")
        op.label(t4, **{DEPLOY_DCGM: "false"})
        wait_for(
            lambda: any(r["value"][1] == "79" for r in prom.query("DCGM_FI_DEV_XID_ERRORS")), 30, what="Xid 79 scraped"
        )
        wait_for(
            lambda: not [r for r in prom.query("DCGM_FI_DEV_GPU_UTIL") if r["metric"]["Hostname"] == t4],
            60,
            interval=0.5,
            what="t4 series gone",
        )
        rc, report, out = validate.run(gpu_validate_prometheus_url=prom.url, gpu_validate_fail_on="never")
        assert rc == 0, out[-3000:]
        rows = Validate.rows(report)
        assert rows[a]["failing_layer"] == "gpu-health"
        assert any("Xid 79" in f["evidence"] for f in rows[a]["findings"])
        assert rows[t4]["failing_layer"] == "monitoring"
        assert any("for 0 of 1 GPUs" in e for e in rows[t4]["evidence"])
    finally:
        prom.stop()


def test_the_verdict_is_recorded_on_each_node_and_a_second_run_changes_nothing(validate, gpu_operator, nodes):
    op = gpu_operator
    _a, _b, t4 = nodes
    op.fault(t4, "device-plugin-not-advertising")
    wait_for(lambda: op.alloc(t4) == "0", 60, what="t4 advertises nothing")
    record = {
        "gpu_validate_record_on_nodes": True,
        "gpu_validate_fail_on": "never",
        "gpuops_report_dir": str(validate.workdir / "recorded"),
    }
    rc, report, out = validate.run(**dict(record))
    assert rc == 0, out[-3000:]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    for row in report["rows"]:
        meta = op.node(row["node"]).metadata
        if row["node"] == t4:
            assert "gpuops.io/validated" not in (meta.labels or {})
            assert meta.annotations["gpuops.io/validation-failed-layer"] == "device-plugin"
        else:
            assert meta.labels["gpuops.io/validated"] == today
            assert "gpuops.io/validation-failed-layer" not in (meta.annotations or {})
    rc, _report, out = validate.run(**dict(record))
    assert rc == 0 and "localhost                  : ok=" in out
    recap = [line for line in out.splitlines() if line.startswith("localhost")][-1]
    assert "changed=0" in recap, recap
    op.fault(t4, None)
    op.wait_healthy(timeout=120)
    validate.run(**dict(record))
    assert op.node(t4).metadata.labels["gpuops.io/validated"] == today
    assert "gpuops.io/validation-failed-layer" not in (op.node(t4).metadata.annotations or {})
    for n in op.gpu_nodes:
        op.core.patch_node(
            n,
            {
                "metadata": {
                    "labels": {"gpuops.io/validated": None},
                    "annotations": {"gpuops.io/validation-failed-layer": None},
                }
            },
        )


def test_check_mode_runs_no_smoke_pod_writes_nothing_to_the_cluster_and_still_reports(validate, testbed, nodes):
    mark = testbed.audit_mark()
    # check mode writes no report unless asked
    asked = {"gpu_validate_report_in_check_mode": True}
    rc, report, out = validate.run(check=True, gpu_validate_record_on_nodes=True, **asked)
    assert rc == 0, out[-3000:]
    # kubernetes.core.k8s plans the node patches with server-side dry runs; nothing is persisted
    assert [e for e in testbed.audit_writes(mark) if "dryRun=All" not in e["requestURI"]] == []
    assert all(r["checks"]["smoke"] == "skipped" and r["verdict"] == "pass" for r in report["rows"])


def test_in_nri_plugin_mode_a_healthy_node_passes_without_a_runtime_class(validate, gpu_operator, nodes):
    """cdi.nriPluginEnabled: the operator keeps no RuntimeClass; the ready toolkit pod (its NRI plugin) proves the
    toolkit layer and every node passes. The ClusterPolicy's cdi is restored afterwards."""
    from kubernetes import client

    op = gpu_operator
    rc_api = client.NodeV1Api(op.api)
    runtime_class = {r.metadata.name: r for r in rc_api.list_runtime_class().items}.get("nvidia")
    assert runtime_class is not None, "the operator keeps RuntimeClass nvidia outside NRI plugin mode"
    if not any(o.uid == op.cp()["metadata"]["uid"] for o in runtime_class.metadata.owner_references or []):
        # made by another spec or owned by an earlier ClusterPolicy: the operator removes only its own, and makes its
        # own again once NRI plugin mode is off
        rc_api.delete_runtime_class("nvidia")
    before = dict(op.cp()["spec"].get("cdi") or {})
    op.patch_cp({"cdi": {"enabled": True, "nriPluginEnabled": True}})
    try:
        wait_for(
            lambda: "nvidia" not in {r.metadata.name for r in rc_api.list_runtime_class().items},
            60,
            what="RuntimeClass nvidia gone in NRI plugin mode",
        )
        op.wait_healthy(timeout=120)
        rc, report, out = validate.run()
        assert rc == 0, out[-3000:]
        assert report["toolkit_mode"] == "nri-plugin"
        assert report["failed"] == 0 and report["passed"] == len(op.gpu_nodes)
        assert all(r["checks"]["operands"] == "pass" and r["checks"]["smoke"] == "pass" for r in report["rows"])
    finally:
        op.patch_cp({"cdi": dict({"nriPluginEnabled": None}, **before)})
    wait_for(
        lambda: "nvidia" in {r.metadata.name for r in rc_api.list_runtime_class().items},
        60,
        what="RuntimeClass nvidia back outside NRI plugin mode",
    )
