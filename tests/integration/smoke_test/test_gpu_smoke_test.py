"""gpu_smoke_test on the real test bed (kube-apiserver, scheduler, kwok), as the least-privilege identity.

kwok runs smoke pods (label gpuops.io/smoke-test=true) to exit 0 after about a second; label
gpuops.io/smoke-test-result=failed makes them exit 1; any other value of that label leaves them Running, which is
how these specs make a pod outlast its timeout. Every container's log is the test bed's default line, which
says it "ran under kwok".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from smoke_helpers import COLLECTIONS, REPO_ROOT

KWOK_LOG = "ran under kwok"


def test_every_gpu_node_passes_with_its_log_and_nothing_is_left_behind(smoke, testbed):
    nodes = smoke.gpu_nodes()
    mark = testbed.audit_mark()
    res = smoke.run(expected_output=KWOK_LOG, poll_interval=0.5)
    assert res.get("failed") is not True, res.get("msg")
    assert res["changed"] is False
    assert sorted(res["nodes"]) == sorted(nodes)
    for node, r in res["nodes"].items():
        assert r["status"] == "passed", (node, r)
        assert KWOK_LOG in r["logs"] and r["exit_code"] == 0 and r["duration"] > 0
        assert r["resources"] == {"nvidia.com/gpu": "1"}
    assert res["summary"] == {"passed": len(nodes), "failed": 0, "pending": 0, "total": len(nodes), "all_passed": True}
    assert smoke.smoke_pods() == [] and res["leftovers"] == []
    writes = testbed.audit_writes(mark)
    creates = [e for e in writes if e["verb"] == "create" and e["objectRef"]["resource"] == "pods"]
    deletes = [e for e in writes if e["verb"] == "delete" and e["objectRef"]["resource"] == "pods"]
    assert len(creates) == len(nodes) and {e["objectRef"]["name"] for e in deletes} >= {
        e["objectRef"]["name"] for e in creates
    }
    # watched with LISTs, never a GET of one pod (pods/log GETs are the log reads)
    reads = [e for e in testbed.audit_events(mark, user=testbed.sa_username) if e["verb"] == "get"]
    assert all(e["objectRef"].get("subresource") == "log" for e in reads if e["objectRef"]["resource"] == "pods")


def test_the_default_expected_output_fails_a_pod_whose_log_lacks_it(smoke):
    node = sorted(smoke.gpu_nodes())[0]
    res = smoke.run(nodes=[node])
    r = res["nodes"][node]
    assert r["status"] == "failed" and "does not contain 'Test PASSED'" in r["reason"]


def test_a_failing_gpu_pod_is_failed_with_its_exit_code(smoke):
    node = sorted(smoke.gpu_nodes())[0]
    res = smoke.run(nodes=[node], expected_output=KWOK_LOG, pod_labels={"gpuops.io/smoke-test-result": "failed"})
    r = res["nodes"][node]
    assert r["status"] == "failed" and r["exit_code"] == 1 and r["reason"].startswith("exit code 1")
    assert smoke.smoke_pods() == []


def test_more_gpus_than_allocatable_stay_pending_with_the_schedulers_message(smoke):
    nodes = smoke.gpu_nodes()
    node = min(nodes, key=nodes.get)
    res = smoke.run(nodes=[node], gpus=str(nodes[node] + 1), schedule_timeout=5, expected_output=KWOK_LOG)
    r = res["nodes"][node]
    assert r["status"] == "pending", r
    assert "Insufficient nvidia.com/gpu" in r["reason"] and "nodes are available" in r["reason"]
    assert r["duration"] >= 5
    assert smoke.smoke_pods() == []


def test_all_requests_every_allocatable_gpu_of_each_node(smoke):
    nodes = smoke.gpu_nodes()
    res = smoke.run(gpus="all", expected_output=KWOK_LOG, concurrency=2)
    assert {n: r["resources"]["nvidia.com/gpu"] for n, r in res["nodes"].items()} == {
        n: str(c) for n, c in nodes.items()
    }
    assert res["summary"]["all_passed"]


def test_an_untolerated_taint_leaves_the_pod_pending_with_the_schedulers_reason_and_a_toleration_fixes_it(smoke):
    node = sorted(smoke.gpu_nodes())[0]
    smoke.core.patch_node(node, {"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}})
    try:
        res = smoke.run(nodes=[node], schedule_timeout=5, expected_output=KWOK_LOG)
        r = res["nodes"][node]
        assert r["status"] == "pending" and "had untolerated taint" in r["reason"]
        tolerate = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        res = smoke.run(nodes=[node], tolerations=tolerate, expected_output=KWOK_LOG)
        assert res["nodes"][node]["status"] == "passed"
    finally:
        smoke.core.patch_node(node, {"spec": {"taints": None}})


def test_a_pod_that_outlasts_its_timeout_fails_and_is_deleted(smoke):
    node = sorted(smoke.gpu_nodes())[0]
    res = smoke.run(nodes=[node], timeout=4, pod_labels={"gpuops.io/smoke-test-result": "hang"})
    r = res["nodes"][node]
    assert r["status"] == "failed" and r["reason"] == "timed out while Running after 4s"
    assert smoke.smoke_pods() == []


def test_sample_and_percent_test_a_subset(smoke):
    nodes = smoke.gpu_nodes()
    res = smoke.run(sample=1, seed=3, expected_output=KWOK_LOG)
    assert len(res["nodes"]) == 1 and res["summary"]["total"] == 1
    res = smoke.run(percent=50, expected_output=KWOK_LOG)
    assert len(res["nodes"]) == -(-len(nodes) // 2)


def test_check_mode_plans_the_pods_and_creates_none(smoke, testbed):
    mark = testbed.audit_mark()
    res = smoke.run(check=True, gpus="all")
    assert res["changed"] is False and res["nodes"] == {}
    assert sorted(p["node"] for p in res["planned"]) == sorted(smoke.gpu_nodes())
    assert testbed.audit_writes(mark) == []


def test_leftovers_of_an_interrupted_run_are_swept_and_a_second_run_changes_nothing(smoke):
    node = sorted(smoke.gpu_nodes())[0]
    leftover = {
        "metadata": {
            "name": "gpuops-smoke-dead0000-leftover",
            "labels": {
                "gpuops.io/smoke-test": "true",
                "gpuops.io/smoke-test-run": "dead0000",
                "gpuops.io/smoke-test-result": "hang",
                "app.kubernetes.io/managed-by": "gpuops.gpu_operator",
            },
        },
        "spec": {"nodeName": node, "containers": [{"name": "smoke", "image": "x"}]},
    }
    smoke.core.create_namespaced_pod("default", leftover)
    res = smoke.run(nodes=[node], expected_output=KWOK_LOG)
    assert res["swept"] == ["gpuops-smoke-dead0000-leftover"] and res["changed"] is True
    assert res["nodes"][node]["status"] == "passed"
    again = smoke.run(nodes=[node], expected_output=KWOK_LOG)
    assert again["swept"] == [] and again["changed"] is False
    assert smoke.smoke_pods() == []


def test_a_run_killed_with_sigterm_deletes_its_pods(smoke, testbed, tmp_path):
    """Ansible ends a module with SIGTERM on timeout or Ctrl-C; the module cleans up before it exits."""
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps(
            {
                "ANSIBLE_MODULE_ARGS": {
                    "kubeconfig": testbed.sa_kubeconfig,
                    "pod_labels": {"gpuops.io/smoke-test-result": "hang"},
                    "timeout": 300,
                }
            }
        )
    )
    module = REPO_ROOT / "plugins" / "modules" / "gpu_smoke_test.py"
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS))
    proc = subprocess.Popen(
        [sys.executable, str(module), str(args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while len(smoke.smoke_pods()) < len(smoke.gpu_nodes()) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert len(smoke.smoke_pods()) == len(smoke.gpu_nodes()), "every node's pod was created"
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    result = json.loads(out)
    assert result["failed"] is True and "interrupted" in result["msg"]
    assert smoke.wait_gone() == []
