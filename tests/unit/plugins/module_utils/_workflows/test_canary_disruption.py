"""Specs for what a planned canary change disrupts: the operator's driver config digest (which inputs feed it, how
the running pod and its DaemonSet are compared), the in-place or full driver restart per node, the GPU pods and the
nvidia.com/gpu.deploy.client DaemonSet pods it evicts, and the policy that refuses too many evictions (pure logic)."""

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.driver_digest import (
    digest_changes,
    pod_digest,
    restarts_in_place,
    selects_client_label,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.disruption import (
    eviction_limit_failure,
    predict,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.gate import Cluster
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.canary.options import CanaryOptions

NS = "gpu-operator"
DS = "nvidia-driver-daemonset"


def digest_env(value):
    return [{"name": "DRIVER_CONFIG_DIGEST", "value": value}] if value else []


def driver_ds(digest):
    spec = {"initContainers": [{"name": "k8s-driver-manager", "env": digest_env(digest)}], "containers": []}
    return {"metadata": {"name": DS, "namespace": NS}, "spec": {"template": {"spec": spec}}}


def pod(name, node, namespace="ml", owner=None, gpus=0, labels=None, spec=None):
    res = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    body = {"containers": [{"name": "c", "resources": res}], "nodeName": node}
    body.update(spec or {})
    meta = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": owner}]
    return {"metadata": meta, "spec": body, "status": {"phase": "Running"}}


def driver_pod(node, digest):
    p = pod("driver-" + node, node, NS, DS, labels={"app.kubernetes.io/component": "nvidia-driver"})
    p["spec"]["containers"] = [{"name": "nvidia-driver-ctr", "env": digest_env(digest)}]
    return p


CP = {"spec": {"driver": {"version": "580.1", "manager": {"version": "v0.12.0"}, "env": []}}}
ON_26_7 = {"driver_version": "580.1", "chart_version": "v26.7.0"}
CLIENT = {"nodeSelector": {"nvidia.com/gpu.deploy.client": "true"}}


def plan(pods, ds_digest="abc", target=None, source=None, **options):
    target = target or {"driver_version": None, "chart_version": "v26.7.1"}
    source = source or ON_26_7
    options.setdefault("chart_values", {"driver": {"manager": {"version": "v0.12.0"}}})
    cluster = Cluster([], pods, [], [driver_ds(ds_digest)], CP)
    return predict(["a100-0", "h100-0"], cluster, target, source, CanaryOptions(**options), NS)


def by_node(result):
    return {n["node"]: n for n in result["nodes"]}


# ---------------------------------------------------------------------------------------------- the digest


def test_the_digest_is_read_from_the_first_container_that_carries_it_init_containers_first():
    spec = {
        "initContainers": [{"name": "k8s-driver-manager", "env": [{"name": "OTHER", "value": "x"}]}],
        "containers": [{"name": "nvidia-driver-ctr", "env": digest_env("d1")}, {"name": "x", "env": digest_env("d2")}],
    }
    assert pod_digest(spec) == "d1"
    assert pod_digest({"containers": [{"name": "c"}]}) == ""


def test_only_operator_releases_from_26_7_0_restart_the_driver_in_place():
    assert restarts_in_place("v26.7.0") and restarts_in_place("v26.7.1") and restarts_in_place("27.1.0")
    assert not restarts_in_place("v26.3.3") and not restarts_in_place(None)


def test_chart_values_that_feed_the_digest_are_told_apart_from_those_that_do_not():
    values = {
        "driver": {"env": [{"name": "X", "value": "1"}], "resources": {"limits": {"cpu": "4"}}, "version": "580.1"},
        "gds": {"enabled": True},
        "daemonsets": {"tolerations": [{"key": "k"}]},
    }
    assert digest_changes(values, CP["spec"]) == ["driver.env", "gds.enabled"]


def test_a_pod_selecting_the_client_label_by_node_selector_or_required_affinity_is_a_client():
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.deploy.client"}]}]
                }
            }
        }
    }
    assert selects_client_label(CLIENT) and selects_client_label(affinity)
    assert not selects_client_label({"nodeSelector": {"nvidia.com/gpu.present": "true"}})


# ---------------------------------------------------------------------------------------------- per node


def test_a_chart_bump_that_keeps_the_digest_restarts_in_place_and_evicts_no_gpu_pod_but_the_clients():
    pods = [
        driver_pod("h100-0", "abc"),
        driver_pod("a100-0", "abc"),
        pod("train", "h100-0", gpus=1),
        pod("agent-h", "h100-0", "monitoring", "gpu-agent", spec=CLIENT),
        pod("logger-h", "h100-0", "monitoring", "log-agent"),
    ]
    result = plan(pods)
    assert result["in_place"] == ["a100-0", "h100-0"] and result["full"] == []
    assert result["evicted_workloads"] == 0
    h100 = by_node(result)["h100-0"]
    assert h100["driver_restart"] == "in-place" and h100["evicted"] == []
    assert h100["clients"] == ["monitoring/agent-h"]
    assert "stays abc" in h100["reason"]


def test_a_driver_version_change_takes_the_full_flow_and_names_the_gpu_pods_it_evicts():
    pods = [driver_pod("h100-0", "abc"), pod("train", "h100-0", gpus=1), pod("web", "h100-0")]
    result = plan(pods, target={"driver_version": "610.1", "chart_version": None})
    h100 = by_node(result)["h100-0"]
    assert h100["driver_restart"] == "full" and h100["evicted"] == ["ml/train"]
    assert h100["reason"] == "the driver version changes (580.1 -> 610.1) and the driver image feeds the digest"
    assert result["evicted_workloads"] == 1


def test_an_operator_before_26_7_always_takes_the_full_flow_and_has_no_client_evictions():
    pods = [driver_pod("h100-0", "abc"), pod("agent-h", "h100-0", "monitoring", "gpu-agent", spec=CLIENT)]
    old = {"driver_version": "580.1", "chart_version": "v26.3.3"}
    h100 = by_node(plan(pods, source=old, target={"driver_version": "610.1", "chart_version": None}))["h100-0"]
    assert h100["driver_restart"] == "full" and h100["clients"] == []
    assert h100["reason"] == "operator v26.3.3 has no in-place driver restart (from v26.7.0 on)"


def test_a_missing_or_different_digest_takes_the_full_flow_as_the_operator_does():
    assert "carries no DRIVER_CONFIG_DIGEST" in by_node(plan([driver_pod("h100-0", "")]))["h100-0"]["reason"]
    assert "differs from its DaemonSet's" in by_node(plan([driver_pod("h100-0", "old")]))["h100-0"]["reason"]
    assert by_node(plan([driver_pod("h100-0", "abc")], ds_digest=""))["h100-0"]["driver_restart"] == "full"


def test_a_chart_bump_that_does_not_pin_the_driver_manager_counts_as_a_digest_change():
    result = plan([driver_pod("h100-0", "abc")], chart_values={})
    h100 = by_node(result)["h100-0"]
    assert h100["driver_restart"] == "full"
    assert "set driver.manager.version in the chart values" in h100["reason"]


def test_a_node_without_an_operator_driver_pod_keeps_its_driver_and_the_wave_policy_decides_its_pods():
    pods = [pod("train", "a100-0", gpus=1)]
    assert by_node(plan(pods))["a100-0"] == {
        "node": "a100-0",
        "driver_restart": "none",
        "reason": "no driver pod of the operator: the driver stays as it is",
        "evicted": ["ml/train"],
        "clients": [],
    }
    assert by_node(plan(pods, eviction="none"))["a100-0"]["evicted"] == []


def test_pods_waited_for_are_never_counted_as_evicted():
    pods = [
        driver_pod("h100-0", "abc"),
        pod("ckpt", "h100-0", gpus=1, labels={"ckpt": "true"}),
        pod("t", "h100-0", gpus=1),
    ]
    result = plan(pods, target={"driver_version": "610.1"}, wait_for_completion_selector="ckpt=true")
    assert by_node(result)["h100-0"]["evicted"] == ["ml/t"]
    assert plan(pods, target={"driver_version": "610.1"}, eviction="wait")["evicted_workloads"] == 0


# ---------------------------------------------------------------------------------------------- the policy


def test_a_plan_evicting_more_workloads_than_the_limit_fails_naming_the_count_the_nodes_and_the_fix():
    pods = [driver_pod("h100-0", "abc"), pod("a", "h100-0", gpus=1), pod("b", "h100-0", gpus=1)]
    result = plan(pods, target={"driver_version": "610.1"})
    assert eviction_limit_failure(result, None) is None and eviction_limit_failure(result, 2) is None
    failure = eviction_limit_failure(result, 1)
    assert failure.startswith("the plan evicts 2 GPU workload pod(s), more than max_evicted_workloads=1: h100-0 (")
    assert "ml/a, ml/b" in failure
    assert "restarts the driver in place (operator v26.7.0 or later" in failure
    assert "raise max_evicted_workloads (gpu_canary_upgrade_max_evicted_workloads with the role)" in failure
