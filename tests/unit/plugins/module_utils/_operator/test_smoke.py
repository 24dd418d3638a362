"""Specs for GPU smoke tests: the pod, the node selection, the verdicts, and a run against a stubbed API server."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client as k8s_client

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.k8s import K8sClient, RetryPolicy
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke import (
    SmokeError,
    SmokeRun,
    classify,
    pod_name,
    pod_spec,
    run_labels,
    run_selector,
    select_nodes,
    summarize,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke_claims import (
    ClaimSetup,
    allocated_devices,
    claim_template,
    selectors,
    use_claim,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.smoke_options import SmokeOptions


def gpu_node(name, alloc="8", hostname=None, gpu=True):
    labels = {"kubernetes.io/hostname": hostname or name}
    if gpu:
        labels["nvidia.com/gpu.present"] = "true"
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"nvidia.com/gpu": alloc}}}


# ------------------------------------------------------------------------------------------ pure functions


def test_the_pod_is_pinned_by_hostname_affinity_so_the_scheduler_can_say_why_it_is_pending():
    pod = pod_spec("r1", gpu_node("gpu-0", hostname="gpu-0.example"), SmokeOptions("img", gpus=2, timeout=120))
    spec = pod["spec"]
    assert "nodeName" not in spec
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-0.example"]}
    ]
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 180
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    labels = pod["metadata"]["labels"]
    assert labels["gpuops.io/smoke-test"] == "true" and labels["gpuops.io/smoke-test-run"] == "r1"
    assert labels["app.kubernetes.io/managed-by"] == "gpuops.gpu_operator"
    assert pod["metadata"]["annotations"]["gpuops.io/smoke-test-node"] == "gpu-0"


def test_all_requests_the_nodes_allocatable_and_at_least_one():
    assert pod_spec("r", gpu_node("a", "8"), SmokeOptions("i", gpus="all"))["spec"]["containers"][0]["resources"][
        "limits"
    ] == {"nvidia.com/gpu": "8"}
    assert pod_spec("r", gpu_node("a", "0"), SmokeOptions("i", gpus="all"))["spec"]["containers"][0]["resources"][
        "limits"
    ] == {"nvidia.com/gpu": "1"}
    with pytest.raises(SmokeError, match="gpus must be a positive integer or 'all'"):
        pod_spec("r", gpu_node("a"), SmokeOptions("i", gpus="many"))
    with pytest.raises(SmokeError, match="at least 1"):
        pod_spec("r", gpu_node("a"), SmokeOptions("i", gpus="0"))


def test_user_labels_cannot_override_the_modules_own_labels():
    pod = pod_spec("r", gpu_node("a"), SmokeOptions("i", pod_labels={"gpuops.io/smoke-test-run": "x", "team": "ml"}))
    assert pod["metadata"]["labels"]["gpuops.io/smoke-test-run"] == "r" and pod["metadata"]["labels"]["team"] == "ml"


def test_long_node_names_give_valid_unique_pod_names():
    a, b = pod_name("r1", "n" * 80 + "a"), pod_name("r1", "n" * 80 + "b")
    assert len(a) <= 63 and len(b) <= 63 and a != b


def test_selection_by_default_is_every_gpu_node_and_sample_or_percent_pick_a_repeatable_subset():
    nodes = [gpu_node("g%02d" % i) for i in range(10)] + [gpu_node("cpu", gpu=False)]
    assert [n["metadata"]["name"] for n in select_nodes(nodes)] == ["g%02d" % i for i in range(10)]
    assert len(select_nodes(nodes, sample=3, seed=1)) == 3
    assert select_nodes(nodes, sample=3, seed=1) == select_nodes(nodes, sample=3, seed=1)
    assert len(select_nodes(nodes, percent=15)) == 2  # rounded up
    assert [n["metadata"]["name"] for n in select_nodes(nodes, names=["cpu"])] == ["cpu"]
    with pytest.raises(SmokeError, match="nodes nope are not in the cluster"):
        select_nodes(nodes, names=["nope"])
    with pytest.raises(SmokeError, match="mutually exclusive"):
        select_nodes(nodes, sample=1, percent=10)


def finished(phase, exit_code=0, message=None):
    term = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error", "message": message}
    return {
        "spec": {"nodeName": "n"},
        "status": {"phase": phase, "containerStatuses": [{"name": "smoke", "state": {"terminated": term}}]},
    }


def test_verdicts():
    assert classify(finished("Succeeded"), "Test PASSED", logs="...\nTest PASSED\n") == ("passed", None, 0)
    status, reason, _code = classify(finished("Succeeded"), "Test PASSED", logs="nothing")
    assert status == "failed" and "does not contain 'Test PASSED'" in reason
    assert classify(finished("Failed", 1, "CUDA error"), "x")[:2] == ("failed", "exit code 1: CUDA error")
    running = {"spec": {"nodeName": "n"}, "status": {"phase": "Running"}}
    assert classify(running) == (None, None, None)
    assert classify(running, timed_out=True)[:2] == ("failed", "timed out while Running")
    unscheduled = {
        "spec": {},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "message": "cond"}]},
    }
    assert classify(unscheduled, timed_out=True, schedule_event="0/3 nodes: Insufficient nvidia.com/gpu")[:2] == (
        "pending",
        "0/3 nodes: Insufficient nvidia.com/gpu",
    )
    assert classify(unscheduled, timed_out=True)[1] == "cond"


# ------------------------------------------------------------------------------------------ a run


class Resp:
    def __init__(self, status, body, raw=False):
        self.status, self.headers, self.reason = status, {}, "x"
        self.data = body if raw else json.dumps(body).encode()


PREPARE_FAILED = (
    "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.nvidia.com is not registered"
)


ADMISSION_REFUSED = (
    "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = Unavailable "
    "desc = error reading from server: EOF, which is unexpected"
)


SANDBOX_FAILED = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "
    '"nvidia" is configured'
)


class FakeCluster:
    """Pods advance one phase per LIST: Pending -> Running -> the node's behaviour."""

    def __init__(self, behaviour, leftovers=(), dra=False, namespace_labels=None):
        # node -> passed | failed | unschedulable | hang | unprepared (scheduled; the kubelet cannot prepare its claims)
        self.behaviour = behaviour
        self.pods = {}
        self.calls = []
        self.max_in_flight = 0
        self.dra = dra  # serves resource.k8s.io/v1 (else 404), with a resource-claim controller
        self.templates, self.claims = {}, {}
        self.namespace = {"metadata": {"name": "default", "labels": dict(namespace_labels or {}), "annotations": {}}}
        self.label_history = []  # the admin-access label after each namespace PATCH
        for name in leftovers:
            self.pods[name] = {
                "metadata": {
                    "name": name,
                    "uid": name,
                    "labels": {
                        "gpuops.io/smoke-test": "true",
                        "app.kubernetes.io/managed-by": "gpuops.gpu_operator",
                        "gpuops.io/smoke-test-run": "old",
                    },
                },
                "spec": {},
                "status": {"phase": "Running"},
            }

    def _how(self, pod):
        return self.behaviour.get(pod["metadata"].get("annotations", {}).get("gpuops.io/smoke-test-node"))

    def _advance(self):
        for pod in self.pods.values():
            node = pod["metadata"].get("annotations", {}).get("gpuops.io/smoke-test-node")
            how = self.behaviour.get(node)
            if how is None:
                continue
            st = pod["status"]
            if how == "unschedulable":
                st.update(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "message": "c"}])
            elif st.get("phase") is None:
                st["phase"] = "Pending"
                pod["spec"]["nodeName"] = node
            elif st["phase"] == "Pending" and how == "refused":  # the kubelet's admission refuses it
                st.update(phase="Failed", reason="UnexpectedAdmissionError", message=ADMISSION_REFUSED)
            elif st["phase"] == "Pending" and how not in ("unprepared", "nosandbox"):
                st["phase"] = "Running"
            elif st["phase"] == "Running" and how in ("passed", "failed"):
                code = 0 if how == "passed" else 1
                st["phase"] = "Succeeded" if code == 0 else "Failed"
                st["containerStatuses"] = [{"name": "smoke", "state": {"terminated": {"exitCode": code}}}]

    def request(self, method, url, body=None, headers=None, timeout=None, retries=None):
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.calls.append((method, parts.path))
        path = parts.path
        if path.startswith("/apis/resource.k8s.io/") or path == "/api/v1/namespaces/default":
            return self._dra(method, path, query, body)
        if method == "GET" and path == "/api/v1/nodes":
            return Resp(200, {"items": [gpu_node(n) for n in sorted(self.behaviour)], "metadata": {}})
        if method == "POST":
            pod = json.loads(body)
            for entry in pod["spec"].get("resourceClaims") or []:  # the resource-claim controller
                template = self.templates[entry["resourceClaimTemplateName"]]
                self.claims[pod["metadata"]["name"] + "-gpu"] = {
                    "metadata": {
                        "name": pod["metadata"]["name"] + "-gpu",
                        "labels": template["spec"]["metadata"]["labels"],
                        "ownerReferences": [{"kind": "Pod", "name": pod["metadata"]["name"]}],
                    },
                    "status": {"allocation": {"devices": {"results": [{"pool": "p", "device": "gpu-0"}]}}},
                }
            pod["metadata"]["uid"] = pod["metadata"]["name"]
            pod["status"] = {}
            self.pods[pod["metadata"]["name"]] = pod
            self.max_in_flight = max(self.max_in_flight, len(self.pods))
            return Resp(201, pod)
        if method == "DELETE":
            name = path.rsplit("/", 1)[1]
            self.claims.pop(name + "-gpu", None)
            return Resp(200, {}) if self.pods.pop(name, None) else Resp(404, {"message": "not found"})
        if path.endswith("/log"):
            if not self.pods[path.split("/")[-2]]["status"].get("containerStatuses"):  # as the kubelet answers
                return Resp(400, {"message": 'container "smoke" in pod is not available'})
            return Resp(200, b"Test PASSED\n", raw=True)
        if path.endswith("/events"):
            reason = query["fieldSelector"].rsplit("reason=", 1)[1]
            kubelet = {
                "FailedPrepareDynamicResources": ("unprepared", PREPARE_FAILED),
                "FailedCreatePodSandBox": (
                    "nosandbox",
                    SANDBOX_FAILED,
                ),
            }
            how, message = kubelet.get(reason, (None, "0/3 nodes are available: untolerated taint"))
            items = [
                {"involvedObject": {"uid": p["metadata"]["uid"]}, "message": message, "lastTimestamp": "t"}
                for p in self.pods.values()
                if (self._how(p) == how if how else p["status"].get("conditions"))
            ]
            return Resp(200, {"items": items, "metadata": {}})
        if path.endswith("/pods"):
            self._advance()
            want = dict(kv.split("=") for kv in query["labelSelector"].split(","))
            items = [p for p in self.pods.values() if all(p["metadata"]["labels"].get(k) == v for k, v in want.items())]
            return Resp(200, {"items": json.loads(json.dumps(items)), "metadata": {}})
        raise AssertionError("unexpected %s %s" % (method, url))

    def _dra(self, method, path, query, body):
        if not self.dra:
            return Resp(404, {"message": "the server could not find the requested resource"})
        if path == "/api/v1/namespaces/default":
            if method == "PATCH":
                patch = json.loads(body)["metadata"]
                for key in ("labels", "annotations"):
                    target = self.namespace["metadata"][key]
                    for k, v in patch.get(key, {}).items():
                        if v is None:
                            target.pop(k, None)
                        else:
                            target[k] = v
                self.label_history.append(
                    self.namespace["metadata"]["labels"].get("resource.kubernetes.io/admin-access")
                )
            return Resp(200, self.namespace)
        store = self.templates if "/resourceclaimtemplates" in path else self.claims
        if method == "POST":
            template = json.loads(body)
            assert not self.pods, "the template exists before the first pod"
            self.templates[template["metadata"]["name"]] = template
            return Resp(201, template)
        if method == "DELETE":
            return Resp(200, {}) if store.pop(path.rsplit("/", 1)[1], None) else Resp(404, {"message": "gone"})
        want = dict(kv.split("=") for kv in query["labelSelector"].split(","))
        items = [o for o in store.values() if all(o["metadata"]["labels"].get(k) == v for k, v in want.items())]
        return Resp(200, {"items": json.loads(json.dumps(items)), "metadata": {}})


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def make_run(cluster, **kwargs):
    cfg = k8s_client.Configuration()
    cfg.host = "https://api.test"
    client = K8sClient(cfg, retry=RetryPolicy(attempts=1), pool_manager=cluster)
    clock = Clock()
    kwargs.setdefault("expected_output", "Test PASSED")
    run = SmokeRun(client, SmokeOptions("img", **kwargs), run_id="r1", clock=clock, sleep=clock.sleep)
    return run, client


def test_a_run_reports_each_node_and_leaves_no_pod_behind():
    cluster = FakeCluster({"a": "passed", "b": "failed", "c": "unschedulable", "d": "hang"})
    run, client = make_run(cluster, timeout=20, schedule_timeout=5)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert {n: r["status"] for n, r in results.items()} == {"a": "passed", "b": "failed", "c": "pending", "d": "failed"}
    assert results["a"]["logs"] == "Test PASSED\n" and results["a"]["exit_code"] == 0
    assert results["c"]["reason"] == "0/3 nodes are available: untolerated taint"
    assert results["c"]["duration"] > 5
    assert results["d"]["reason"] == "timed out while Running after 20s"
    assert cluster.pods == {} and run.leftovers == []
    assert summarize(results, list(results)) == {
        "passed": 1,
        "failed": 2,
        "pending": 1,
        "total": 4,
        "all_passed": False,
    }


def test_a_pod_the_kubelet_refuses_fails_with_the_kubelets_reason_and_no_log_is_read():
    cluster = FakeCluster({"a": "refused"})
    run, client = make_run(cluster, timeout=20, schedule_timeout=5)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert results["a"]["status"] == "failed"
    assert results["a"]["reason"] == "UnexpectedAdmissionError: " + ADMISSION_REFUSED
    assert not [call for call in cluster.calls if call[1].endswith("/log")]
    assert cluster.pods == {}


def test_a_pod_whose_sandbox_cannot_be_created_is_pending_with_the_kubelets_message_after_the_schedule_timeout():
    cluster = FakeCluster({"a": "nosandbox"})
    run, client = make_run(cluster, timeout=300, schedule_timeout=5)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert results["a"]["status"] == "pending"
    assert (
        results["a"]["reason"] == "scheduled but the container did not start (ContainerCreating; %s)" % SANDBOX_FAILED
    )
    assert results["a"]["duration"] < 60
    assert cluster.pods == {}


def test_pods_are_watched_by_list_never_by_a_get_per_pod():
    cluster = FakeCluster({"n%02d" % i: "passed" for i in range(20)})
    run, client = make_run(cluster, concurrency=20)
    run.run(select_nodes(client.list_core("nodes")))
    gets = [p for m, p in cluster.calls if m == "GET" and "/pods/" in p and not p.endswith("/log")]
    assert gets == []


def test_concurrency_bounds_the_pods_in_flight():
    cluster = FakeCluster({"n%02d" % i: "passed" for i in range(12)})
    run, client = make_run(cluster, concurrency=3)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert cluster.max_in_flight == 3 and len(results) == 12
    assert all(r["status"] == "passed" for r in results.values())


def test_leftovers_of_an_interrupted_run_are_swept_by_label():
    cluster = FakeCluster({}, leftovers=["gpuops-smoke-old-a", "gpuops-smoke-old-b"])
    run, _client = make_run(cluster)
    assert run.sweep() == ["gpuops-smoke-old-a", "gpuops-smoke-old-b"] and cluster.pods == {}


def test_cleanup_runs_when_the_run_is_interrupted():
    cluster = FakeCluster({"a": "hang", "b": "hang"})
    run, client = make_run(cluster)
    nodes = select_nodes(client.list_core("nodes"))

    def interrupt(_seconds):
        raise KeyboardInterrupt("signal 15")

    run.sleep = interrupt
    with pytest.raises(KeyboardInterrupt):
        run.run(nodes)
    assert cluster.pods == {}


def test_a_cluster_without_dra_is_swept_of_pods_only():
    cluster = FakeCluster({}, leftovers=["gpuops-smoke-old-a"])
    run, _client = make_run(cluster)
    assert run.sweep() == ["gpuops-smoke-old-a"]
    assert ("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates") in cluster.calls


# ------------------------------------------------------------------------------------------ claim mode


def test_a_claim_template_asks_for_a_count_or_all_with_cel_selectors_and_admin_access():
    labels = run_labels("r1")
    cel = selectors("gpu.nvidia.com", product="NVIDIA H100 80GB HBM3", mig_profile="1g.10gb", cel=["true"])
    template = claim_template("r1", labels, "mig.nvidia.com", "all", cel, admin_access=True)
    assert template["metadata"] == {"name": "gpuops-smoke-r1", "labels": labels}
    assert template["spec"]["metadata"]["labels"] == labels  # the claims made from it carry the run's labels
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["name"] == "gpu"
    assert request["exactly"] == {
        "deviceClassName": "mig.nvidia.com",
        "allocationMode": "All",
        "adminAccess": True,
        "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}},
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}},
            {"cel": {"expression": "true"}},
        ],
    }
    assert claim_template("r1", labels, "gpu.nvidia.com", 2)["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.nvidia.com",
        "count": 2,
    }


def test_quotes_in_a_selected_product_are_escaped_for_cel():
    assert selectors(product="it's") == ["device.attributes['gpu.nvidia.com'].productName == 'it\\'s'"]


def test_a_claim_pod_references_the_template_and_requests_no_extended_resource():
    template = claim_template("r1", run_labels("r1"), "gpu.nvidia.com")
    pod = use_claim(pod_spec("r1", gpu_node("a"), SmokeOptions("img")), template)
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpuops-smoke-r1"}]
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert "nodeAffinity" in pod["spec"]["affinity"]  # still pinned to its node


def test_the_devices_of_a_claim_are_read_from_its_allocation():
    claim = {
        "metadata": {"name": "c", "ownerReferences": [{"kind": "Pod", "name": "p"}]},
        "status": {"allocation": {"devices": {"results": [{"pool": "n0", "device": "gpu-3"}]}}},
    }
    assert allocated_devices([claim, {"metadata": {"name": "pending"}}]) == {"p": ["n0/gpu-3"]}


def claim_run(cluster, admin=False, **kwargs):
    run, client = make_run(cluster, **kwargs)
    template = claim_template("r1", run_labels("r1"), "gpu.nvidia.com", admin_access=admin)
    run.claims = ClaimSetup(client, "default", template, run_selector("r1"))
    return run, client


def test_a_claim_run_reports_the_devices_and_leaves_no_template_or_claim_behind():
    cluster = FakeCluster({"a": "passed", "b": "hang"}, dra=True)
    run, client = claim_run(cluster, timeout=10)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert results["a"]["status"] == "passed" and results["a"]["devices"] == ["p/gpu-0"]
    assert results["a"]["resources"] == {"gpu.nvidia.com": "1"}
    assert cluster.pods == {} and cluster.templates == {} and cluster.claims == {} and run.leftovers == []
    assert cluster.label_history == []  # no admin access, the namespace is left alone


def test_a_claim_the_kubelet_cannot_prepare_is_pending_with_its_message_after_the_schedule_timeout_not_the_timeout():
    cluster = FakeCluster({"a": "passed", "b": "unprepared"}, dra=True)
    run, client = claim_run(cluster, timeout=300, schedule_timeout=20)
    results = run.run(select_nodes(client.list_core("nodes")))
    assert results["a"]["status"] == "passed"
    assert results["b"]["status"] == "pending" and PREPARE_FAILED in results["b"]["reason"]
    assert 20 < results["b"]["duration"] < 30, "decided once the schedule timeout passed, not after 300 s"
    assert cluster.pods == {} and cluster.claims == {} and cluster.templates == {}


def test_admin_access_labels_the_namespace_for_the_run_only():
    cluster = FakeCluster({"a": "passed"}, dra=True)
    run, client = claim_run(cluster, admin=True)
    run.run(select_nodes(client.list_core("nodes")))
    assert cluster.label_history == ["true", None] and run.claims.labelled is True
    assert cluster.namespace["metadata"]["annotations"] == {}


def test_admin_access_in_a_namespace_already_labelled_leaves_the_label():
    cluster = FakeCluster({"a": "passed"}, dra=True, namespace_labels={"resource.kubernetes.io/admin-access": "true"})
    run, client = claim_run(cluster, admin=True)
    run.run(select_nodes(client.list_core("nodes")))
    assert cluster.label_history == [] and cluster.namespace["metadata"]["labels"]


def test_the_sweep_removes_an_interrupted_claim_runs_template_and_label():
    cluster = FakeCluster({}, dra=True)
    cluster.templates["gpuops-smoke-old"] = claim_template("old", run_labels("old"), "gpu.nvidia.com")
    cluster.namespace["metadata"]["labels"]["resource.kubernetes.io/admin-access"] = "true"
    cluster.namespace["metadata"]["annotations"]["gpuops.io/smoke-test-admin-access"] = "gpuops-smoke-old"
    run, _client = make_run(cluster)
    assert run.sweep() == [
        "resourceclaimtemplate/gpuops-smoke-old",
        "namespace/default label resource.kubernetes.io/admin-access",
    ]
    assert cluster.templates == {} and cluster.namespace["metadata"]["labels"] == {}


def test_a_scheduled_claim_pod_that_never_starts_carries_the_kubelets_message():
    pod = {
        "spec": {"nodeName": "n"},
        "status": {
            "phase": "Pending",
            "containerStatuses": [{"name": "smoke", "state": {"waiting": {"reason": "ContainerCreating"}}}],
        },
    }
    message = (
        "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.nvidia.com is not registered"
    )
    assert classify(pod, timed_out=True, node_event=message)[:2] == (
        "pending",
        "scheduled but the container did not start (ContainerCreating; %s)" % message,
    )
