"""Workloads are placed by the real scheduler and driven through their lifecycle by kwok."""

import uuid

import pytest
from kubernetes import client

from tests.integration.helpers import wait_for
from tests.sim import profiles


@pytest.fixture
def ns(testbed):
    api = testbed.api_client()
    core = client.CoreV1Api(api)
    name = f"tb-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    wait_for(
        lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(name).items),
        60,
        what="default service account",
    )
    yield name
    core.delete_namespace(name)


def _pod_spec(**extra):
    spec = {"containers": [{"name": "main", "image": "registry.invalid/gpuops/none:0"}]}
    spec.update(extra)
    return spec


def test_deployment_reaches_running(testbed, ns):
    api = testbed.api_client()
    labels = {"app": "web"}
    client.AppsV1Api(api).create_namespaced_deployment(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec()},
            },
        },
    )
    wait_for(
        lambda: (client.AppsV1Api(api).read_namespaced_deployment("web", ns).status.ready_replicas or 0) == 3,
        timeout=90,
        what="3 ready replicas",
    )
    pods = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector="app=web").items
    assert len(pods) == 3
    for p in pods:
        assert p.status.phase == "Running" and p.spec.node_name and p.status.pod_ip


def test_daemonset_covers_schedulable_nodes(testbed, ns):
    api = testbed.api_client()
    prof = profiles.load(testbed.profile)
    # nodes whose taints a plain pod does not tolerate get no pod
    untainted = [n for p in prof.pools if not p.taints and p.role != "control-plane" for n in p.node_names()]
    labels = {"app": "agent"}
    client.AppsV1Api(api).create_namespaced_daemon_set(
        ns,
        {
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec()},
            },
        },
    )

    def ready():
        st = client.AppsV1Api(api).read_namespaced_daemon_set("agent", ns).status
        return st.desired_number_scheduled == len(untainted) and st.number_ready == len(untainted)

    wait_for(ready, timeout=90, what=f"{len(untainted)} daemon pods ready")
    pods = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector="app=agent").items
    assert sorted(p.spec.node_name for p in pods) == sorted(untainted)


def test_gpu_pod_is_scheduled_on_gpu_node(testbed, ns):
    api = testbed.api_client()
    prof = profiles.load(testbed.profile)
    if prof.operator != "none":
        pytest.skip("GPU capacity is managed by the simulated operator in this profile")
    gpu_nodes = {n for p in prof.gpu_pools() for n in p.node_names()}
    client.CoreV1Api(api).create_namespaced_pod(
        ns,
        {
            "metadata": {"name": "cuda"},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.invalid/cuda:0",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            },
        },
    )
    pod = wait_for(
        lambda: _pod_in_phase(client.CoreV1Api(api), "cuda", ns, "Running"), timeout=90, what="GPU pod running"
    )
    assert pod.spec.node_name in gpu_nodes


def _pod_in_phase(core, name, ns, phase):
    """The pod when it has reached ``phase``, else None."""
    pod = core.read_namespaced_pod(name, ns)
    return pod if pod.status.phase == phase else None


def test_job_succeeds(testbed, ns):
    api = testbed.api_client()
    client.BatchV1Api(api).create_namespaced_job(
        ns,
        {
            "metadata": {"name": "once"},
            "spec": {
                "completions": 2,
                "parallelism": 2,
                "backoffLimit": 0,
                "template": {"spec": _pod_spec(restartPolicy="Never")},
            },
        },
    )
    wait_for(
        lambda: (client.BatchV1Api(api).read_namespaced_job("once", ns).status.succeeded or 0) == 2,
        timeout=90,
        what="job succeeded",
    )
    job = client.BatchV1Api(api).read_namespaced_job("once", ns)
    assert any(c.type == "Complete" and c.status == "True" for c in job.status.conditions)


def test_smoke_test_pod_succeeds_and_has_logs(testbed, ns):
    api = testbed.api_client()
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": "smoke", "labels": {"gpuops.io/smoke-test": "true"}},
            "spec": _pod_spec(restartPolicy="Never"),
        },
    )
    pod = wait_for(lambda: _pod_in_phase(core, "smoke", ns, "Succeeded"), timeout=90, what="smoke-test pod Succeeded")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0
    logs = core.read_namespaced_pod_log("smoke", ns)
    assert "gpuops test bed" in logs


def test_failing_smoke_test_pod(testbed, ns):
    core = client.CoreV1Api(testbed.api_client())
    core.create_namespaced_pod(
        ns,
        {
            "metadata": {
                "name": "smoke-bad",
                "labels": {"gpuops.io/smoke-test": "true", "gpuops.io/smoke-test-result": "failed"},
            },
            "spec": _pod_spec(restartPolicy="Never"),
        },
    )
    pod = wait_for(lambda: _pod_in_phase(core, "smoke-bad", ns, "Failed"), timeout=90, what="smoke-test pod Failed")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 1
