"""gpu_smoke_test in claim mode on the ci-dra bed, as the least-privilege identity: the real kube-controller-manager
makes each pod's claim from the run's template, the real kube-scheduler allocates a device of the pod's node, the
simulated kubelet plugin prepares it, and kwok runs the pod (smoke pods exit 0 after about a second, their log
says they "ran under kwok")."""

from __future__ import annotations

import contextlib
import time

from tests.integration.helpers import wait_for
from tests.integration.testbed.dra_helpers import ADMIN_ACCESS, RESOURCE

KWOK_LOG = "ran under kwok"
SMOKE = "gpuops.io/smoke-test=true"
NODE = "h100-0"


def _left(dra, ns="default"):
    """The smoke test's claim templates and claims still in ``ns``."""
    return [
        "%s/%s" % (plural, o["metadata"]["name"])
        for plural in ("resourceclaimtemplates", "resourceclaims")
        for o in dra.custom.list_namespaced_custom_object(*RESOURCE, ns, plural, label_selector=SMOKE)["items"]
    ]


def test_every_gpu_node_passes_through_a_claim_and_nothing_is_left_behind(dra, run):
    mark = dra.bed.audit_mark()
    res = run("gpu_smoke_test", allocation="claim", mode="nvidia-smi", expected_output=KWOK_LOG, poll_interval=0.5)
    assert not res.get("failed"), res.get("msg")
    assert sorted(res["nodes"]) == sorted(dra.gpu_nodes) and res["summary"]["all_passed"] is True
    for node, r in res["nodes"].items():
        assert r["status"] == "passed" and r["resources"] == {"gpu.nvidia.com": "1"}, (node, r)
        (device,) = r["devices"]
        assert device.startswith(node + "/gpu-")  # the pool is the node: a device of its own node
    assert res["claim_template"]["metadata"]["name"] == "gpuops-smoke-%s" % res["run_id"]
    assert res["changed"] is False and res["leftovers"] == [] and res["namespace_labelled"] is False
    assert _left(dra) == [] and dra.core.list_namespaced_pod("default", label_selector=SMOKE).items == []
    time.sleep(1.0)  # audit events are flushed asynchronously
    writes = [(e["verb"], e["objectRef"]["resource"]) for e in dra.bed.audit_writes(mark)]
    assert writes.count(("create", "resourceclaimtemplates")) == 1 == writes.count(("delete", "resourceclaimtemplates"))
    assert ("create", "resourceclaims") not in writes  # the claims are the controller's, made from the template


def test_a_mig_profile_selects_a_mig_device(dra, run):
    res = run("gpu_smoke_test", allocation="claim", nodes=["a100-0"], mig_profile="1g.10gb", expected_output=KWOK_LOG)
    r = res["nodes"]["a100-0"]
    assert r["status"] == "passed" and r["resources"] == {"mig.nvidia.com": "1"}
    assert r["devices"][0].startswith("a100-0/gpu-") and "-mig-" in r["devices"][0]


@contextlib.contextmanager
def busy(dra, node):
    """Every GPU of ``node`` held by a running pod's claim."""
    with dra.namespace() as ns:
        dra.claim_template(ns, "all-gpus", count=8)
        dra.pod(ns, "holder", "all-gpus", node=node)
        dra.running(ns, "holder")
        assert len(dra.allocation(ns, "holder")) == 8
        yield


def test_admin_access_validates_a_fully_busy_node_and_removes_the_namespace_label_again(dra, run):
    with busy(dra, NODE):
        plain = run("gpu_smoke_test", allocation="claim", nodes=[NODE], schedule_timeout=5, expected_output=KWOK_LOG)
        assert plain["nodes"][NODE]["status"] == "pending"
        assert "cannot allocate all claims" in plain["nodes"][NODE]["reason"]
        res = run(
            "gpu_smoke_test",
            allocation="claim",
            admin_access=True,
            gpus="all",
            nodes=[NODE],
            expected_output=KWOK_LOG,
        )
        r = res["nodes"][NODE]
        assert r["status"] == "passed", r
        assert sorted(r["devices"]) == sorted("%s/gpu-%d" % (NODE, i) for i in range(8))  # every GPU, all of them busy
        assert r["resources"] == {"gpu.nvidia.com": "all"} and res["namespace_labelled"] is True
    labels = dra.core.read_namespace("default").metadata.labels or {}
    assert ADMIN_ACCESS not in labels and _left(dra) == []


def test_check_mode_plans_the_template_and_writes_nothing(dra, run):
    mark = dra.bed.audit_mark()
    res = run("gpu_smoke_test", check=True, allocation="claim", admin_access=True, nodes=[NODE])
    assert res["planned"][0]["resources"] == {"gpu.nvidia.com": "1"} and res["namespace_labelled"] is True
    assert res["claim_template"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
    time.sleep(1.0)
    assert dra.bed.audit_writes(mark) == []


def test_an_interrupted_runs_template_and_namespace_label_are_swept(dra, run):
    labels = {
        "gpuops.io/smoke-test": "true",
        "gpuops.io/smoke-test-run": "old",
        "app.kubernetes.io/managed-by": "gpuops.gpu_operator",
    }
    body = {"metadata": {"name": "gpuops-smoke-old", "labels": labels}, "spec": {"spec": {"devices": {"requests": []}}}}
    dra.custom.create_namespaced_custom_object(*RESOURCE, "default", "resourceclaimtemplates", body)
    mark = {"labels": {ADMIN_ACCESS: "true"}, "annotations": {"gpuops.io/smoke-test-admin-access": "gpuops-smoke-old"}}
    dra.core.patch_namespace("default", {"metadata": mark})
    res = run("gpu_smoke_test", allocation="claim", nodes=[NODE], expected_output=KWOK_LOG)
    assert res["swept"] == [
        "resourceclaimtemplate/gpuops-smoke-old",
        "namespace/default label resource.kubernetes.io/admin-access",
    ]
    assert res["changed"] is True and res["nodes"][NODE]["status"] == "passed"
    assert ADMIN_ACCESS not in (dra.core.read_namespace("default").metadata.labels or {})
    wait_for(lambda: _left(dra) == [], 30, 0.5, what="no smoke-test template or claim left")
