"""What a canary upgrade disrupts, predicted by the plan and then observed on a canary bed of its own (20 GPU nodes,
the simulated GPU Operator, chart v26.3.3 at the start): the driver restart of each planned node - in place on
operator 26.7.0 and later when the driver config digest stays, else the full flow that evicts the GPU workloads -
the GPU pods evicted, the pods of a GPU-client DaemonSet (nvidia.com/gpu.deploy.client) evicted with the driver
restart, and the policy that refuses a plan evicting too many workloads before any write.

Tests run in file order: the first moves the bed to chart v26.7.0, the last to v26.7.1 (chart upgrades cannot be
undone); the `clean` fixture puts every node back on the ClusterPolicy's driver before and after each.
"""

from __future__ import annotations

from canary_helpers import NS, wait_for

CLIENT_LABEL = "nvidia.com/gpu.deploy.client"
CLIENT_DS = "gpu-client-agent"
JOB = "train"


def _chart(cb, version, **extra):
    return dict(
        gpu_canary_upgrade_chart_version=version,
        gpu_canary_upgrade_chart_repo_url=cb.t.chart_repo_url,
        gpu_canary_upgrade_helm_binary=cb.t.helm,
        gpu_canary_upgrade_chart_ready_timeout=240,
        gpu_canary_upgrade_waves=["100%"],
        **extra,
    )


def _client_daemonset(cb):
    """A third-party GPU-client DaemonSet selecting the nvidia.com/gpu.deploy.client label, running on every GPU
    node; returns its pods' uids by node."""
    cb.apps.create_namespaced_daemon_set(
        "default",
        {
            "metadata": {"name": CLIENT_DS, "labels": {"gpuops.io/canary-test": "true"}},
            "spec": {
                "selector": {"matchLabels": {"app": CLIENT_DS}},
                "template": {
                    "metadata": {"labels": {"app": CLIENT_DS}},
                    "spec": {
                        "nodeSelector": {CLIENT_LABEL: "true"},
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "agent", "image": "example.com/gpu-agent:1"}],
                    },
                },
            },
        },
    )
    nodes = set(cb.gpu_node_names())
    wait_for(lambda: set(_client_pods(cb)) == nodes, 60, what="a GPU-client pod on every GPU node")
    return _client_pods(cb)


def _client_pods(cb):
    pods = cb.core.list_namespaced_pod("default", label_selector="app=" + CLIENT_DS).items
    return {
        p.spec.node_name: p.metadata.uid
        for p in pods
        if not p.metadata.deletion_timestamp and p.status.phase == "Running"
    }


def _drop_client_daemonset(cb):
    cb.apps.delete_namespaced_daemon_set(CLIENT_DS, "default", propagation_policy="Background")
    wait_for(lambda: not _client_pods(cb), 60, what="the GPU-client pods gone")


def _driver_pod_uid(cb, node):
    pods = cb.core.list_namespaced_pod(NS, label_selector="app.kubernetes.io/component=nvidia-driver").items
    return next(p.metadata.uid for p in pods if p.spec.node_name == node and not p.metadata.deletion_timestamp)


def _job_uid(cb):
    return cb.core.read_namespaced_pod(JOB, "default").metadata.uid if cb.pod_alive(JOB) else None


def test_a_plan_that_evicts_more_workloads_than_allowed_is_refused_before_any_write(clean):
    before = clean.snapshot()
    clean.gpu_pod(JOB, "h100-0", {"app": JOB})
    clean.gpu_pod("infer", "a100-0", {"app": "infer"})
    try:
        r = clean.playbook(gpu_canary_upgrade_driver_version="610.70.01", gpu_canary_upgrade_max_evicted_workloads=1)
        assert r.returncode != 0
        assert "the plan evicts 2 GPU workload pod(s), more than max_evicted_workloads=1: a100-0 (" in r.output
        assert "h100-0 (operator v26.3.3 has no in-place driver restart (from v26.7.0 on)): default/train" in r.output
        assert "raise max_evicted_workloads (gpu_canary_upgrade_max_evicted_workloads with the role)" in r.output
        assert clean.record() is None  # nothing was written
        assert clean.snapshot() == before
        assert clean.pod_alive(JOB) and clean.pod_alive("infer")
    finally:
        clean.delete_gpu_workloads()


def test_the_first_bump_to_26_7_takes_the_full_flow_and_evicts_the_gpu_pod_the_plan_named(clean):
    clean.gpu_pod(JOB, "h100-0", {"app": JOB})
    try:
        r = clean.playbook(**_chart(clean, "v26.7.0", gpu_canary_upgrade_driver_version="610.71.01"))
        assert r.returncode == 0, r.output[-4000:]
        # driver pods of v26.3.3 carry no digest: the operator takes the full flow, which the plan said
        assert "h100-0: driver restart full (the running driver pod carries no DRIVER_CONFIG_DIGEST" in r.output
        assert "evicts default/train" in r.output
        assert not clean.pod_alive(JOB)
    finally:
        clean.delete_gpu_workloads()


def test_a_driver_bump_on_26_7_evicts_the_gpu_pod_and_the_gpu_client_pod_the_plan_named(clean):
    clients = _client_daemonset(clean)
    clean.gpu_pod(JOB, "h100-0", {"app": JOB})
    try:
        r = clean.playbook(gpu_canary_upgrade_driver_version="610.72.01")
        assert r.returncode == 0, r.output[-4000:]
        line = next(ln for ln in r.output.splitlines() if "h100-0: driver restart" in ln)
        assert "driver restart full (the driver version changes (610.71.01 -> 610.72.01)" in line
        assert (
            "evicts default/train;" in line and "nvidia.com/gpu.deploy.client pods: default/gpu-client-agent-" in line
        )
        assert not clean.pod_alive(JOB)
        now = _client_pods(clean)
        assert now["h100-0"] != clients["h100-0"]  # evicted with the driver restart, recreated by its DaemonSet
    finally:
        clean.delete_gpu_workloads()
        _drop_client_daemonset(clean)


def test_a_chart_bump_that_keeps_the_driver_digest_restarts_the_driver_in_place_and_evicts_no_gpu_pod(clean):
    clients = _client_daemonset(clean)
    clean.gpu_pod(JOB, "h100-0", {"app": JOB})
    job, driver = _job_uid(clean), _driver_pod_uid(clean, "h100-0")
    manager = clean.cp()["spec"]["driver"]["manager"]["version"]
    try:
        values = {"driver": {"manager": {"version": manager}}}
        r = clean.playbook(**_chart(clean, "v26.7.1", gpu_canary_upgrade_chart_values=values))
        assert r.returncode == 0, r.output[-4000:]
        line = next(ln for ln in r.output.splitlines() if "h100-0: driver restart" in ln)
        assert "driver restart in-place (the driver config digest stays" in line
        assert "evicts none;" in line and "nvidia.com/gpu.deploy.client pods: default/gpu-client-agent-" in line
        assert "full flow on none; 0 GPU workload pod(s) evicted" in r.output
        wait_for(lambda: _driver_pod_uid(clean, "h100-0") != driver, 60, what="the driver pod of h100-0 restarted")
        assert _job_uid(clean) == job  # the GPU workload kept running through the driver restart
        assert _client_pods(clean)["h100-0"] != clients["h100-0"]  # the GPU client went with it
        assert clean.cp()["metadata"]["labels"]["helm.sh/chart"].endswith("v26.7.1")
    finally:
        clean.delete_gpu_workloads()
        _drop_client_daemonset(clean)
