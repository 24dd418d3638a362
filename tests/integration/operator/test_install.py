"""Installing the stand-in chart: ClusterPolicy ready, operands on GPU nodes only, allocatable = profile."""

from __future__ import annotations

from tests.integration.simop_helpers import NS, wait_for

OPERAND_DS = (
    "nvidia-driver-daemonset",
    "nvidia-container-toolkit-daemonset",
    "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery",
    "nvidia-dcgm-exporter",
    "nvidia-operator-validator",
)


def test_clusterpolicy_ready_and_allocatable_equals_profile(gpu_operator):
    op = gpu_operator
    op.wait_healthy(timeout=30)
    cp = op.cp()
    conds = {c["type"]: c for c in cp["status"]["conditions"]}
    assert conds["Ready"]["status"] == "True" and conds["Ready"]["reason"] == "Reconciled"
    for n, g in op.gpu_nodes.items():
        assert op.cap(n) == str(g.count) and op.alloc(n) == str(g.count)
    for n in op.cpu_nodes:
        assert op.alloc(n) in (None, "0")


def test_the_policy_registers_the_nvidia_runtime_class(gpu_operator):
    from kubernetes import client

    op = gpu_operator
    op.wait_healthy(timeout=30)
    node_api = client.NodeV1Api(op.api)

    def registered():
        """The RuntimeClass, once there: after an earlier module's policy was uninstalled, the garbage collector may
        delete its copy just before this policy's next reconcile pass registers it anew."""
        return next((rc for rc in node_api.list_runtime_class().items if rc.metadata.name == "nvidia"), None)

    rc = wait_for(registered, 15, what="RuntimeClass nvidia")
    assert rc.handler == "nvidia"
    assert [o.kind for o in rc.metadata.owner_references] == ["ClusterPolicy"]


def test_operand_daemonsets_pods_running_on_gpu_nodes_only(gpu_operator):
    op = gpu_operator
    names = {d.metadata.name: d for d in op.apps.list_namespaced_daemon_set(NS).items}
    for ds in OPERAND_DS:
        assert ds in names, f"missing DaemonSet {ds}"
        pods = op.pods(app=ds)
        nodes = {p.spec.node_name for p in pods}
        assert nodes == set(op.gpu_nodes), (ds, nodes)
        assert all(p.status.phase == "Running" for p in pods)
    drv = names["nvidia-driver-daemonset"]
    assert drv.spec.update_strategy.type == "OnDelete"
    assert drv.spec.template.spec.node_selector == {"nvidia.com/gpu.deploy.driver": "true"}
    assert drv.spec.template.metadata.labels["app.kubernetes.io/component"] == "nvidia-driver"
    tol = [t.key for t in names["nvidia-device-plugin-daemonset"].spec.template.spec.tolerations]
    assert "nvidia.com/gpu" in tol


def test_gpu_node_labels(gpu_operator):
    op = gpu_operator
    for n, g in op.gpu_nodes.items():
        lab = op.node(n).metadata.labels
        assert lab["nvidia.com/gpu.present"] == "true"
        assert lab["nvidia.com/gpu.product"] == g.product
        assert lab["nvidia.com/gpu.count"] == str(g.count)
        assert lab["nvidia.com/gpu.memory"] == str(g.memory_mib)
        assert lab["nvidia.com/cuda.driver-version.full"] == "595.91.07"
        assert lab["nvidia.com/cuda.driver-version.major"] == "595"
        for comp in (
            "driver",
            "container-toolkit",
            "device-plugin",
            "gpu-feature-discovery",
            "dcgm-exporter",
            "operator-validator",
        ):
            assert lab[f"nvidia.com/gpu.deploy.{comp}"] == "true"
        assert lab["nvidia.com/mig.capable"] in ("true", "false")
    for n in op.cpu_nodes:
        assert "nvidia.com/gpu.present" not in op.node(n).metadata.labels


def test_user_set_deploy_label_is_respected(gpu_operator):
    op = gpu_operator
    n = sorted(op.gpu_nodes)[-1]
    op.label(n, **{"nvidia.com/gpu.deploy.driver": "pre-installed"})
    try:
        wait_for(lambda: not op.pods(app="nvidia-driver-daemonset", node=n), 20, what="driver pod gone")
        assert op.node(n).metadata.labels["nvidia.com/gpu.deploy.driver"] == "pre-installed"
        op.wait_healthy()  # a host driver still serves the device plugin
    finally:
        op.label(n, **{"nvidia.com/gpu.deploy.driver": "true"})
    wait_for(lambda: op.pods(app="nvidia-driver-daemonset", node=n), 20, what="driver pod back")
    op.wait_healthy()


def test_untolerated_taint_blocks_operands_until_tolerated(gpu_operator):
    op = gpu_operator
    n = sorted(op.gpu_nodes)[-1]
    node = op.node(n)
    taints = [t.to_dict() for t in node.spec.taints or []]
    op.core.patch_node(
        n, {"spec": {"taints": taints + [{"key": "gpuops.io/canary", "value": "true", "effect": "NoSchedule"}]}}
    )
    try:
        for p in op.pods(app="nvidia-device-plugin-daemonset", node=n):
            op.core.delete_namespaced_pod(p.metadata.name, NS, grace_period_seconds=0)
        wait_for(lambda: op.alloc(n) == "0", 20, what="allocatable withdrawn without a device plugin")
        import time

        time.sleep(2)
        assert not [
            p for p in op.pods(app="nvidia-device-plugin-daemonset", node=n) if not p.metadata.deletion_timestamp
        ], "an untolerated taint must block the operand"
        tols = op.cp()["spec"]["daemonsets"]["tolerations"]
        op.patch_cp(
            {
                "daemonsets": {
                    "tolerations": tols + [{"key": "gpuops.io/canary", "operator": "Exists", "effect": "NoSchedule"}]
                }
            }
        )
        wait_for(lambda: op.alloc(n) == str(op.gpu_nodes[n].count), 30, what="operand back once tolerated")
    finally:
        op.core.patch_node(n, {"spec": {"taints": taints or None}})
        cp = op.cp()
        tols = [t for t in cp["spec"]["daemonsets"]["tolerations"] if t.get("key") != "gpuops.io/canary"]
        op.patch_cp({"daemonsets": {"tolerations": tols}})
    op.wait_healthy()
