"""The profile's nodes exist, are Ready and carry the capacity, NFD labels and taints the profile names."""

from tests.sim import profiles


def _nodes(testbed):
    from kubernetes import client

    return {n.metadata.name: n for n in client.CoreV1Api(testbed.api_client()).list_node().items}


def test_every_profile_node_is_ready(testbed):
    prof = profiles.load(testbed.profile)
    nodes = _nodes(testbed)
    expected = {name for pool in prof.pools for name in pool.node_names()}
    assert expected <= set(nodes)
    for name in expected:
        ready = [c for c in nodes[name].status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True", name


def test_gpu_nodes_have_gpu_capacity_and_nfd_labels(testbed):
    prof = profiles.load(testbed.profile)
    nodes = _nodes(testbed)
    for pool in prof.pools:
        for name in pool.node_names():
            node = nodes[name]
            labels = node.metadata.labels
            assert labels["feature.node.kubernetes.io/kernel-version.full"] == pool.kernel
            assert labels["feature.node.kubernetes.io/system-os_release.ID"] == pool.os_id
            assert labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"] == pool.os_version_id
            assert node.status.capacity["cpu"] == pool.cpu
            if pool.gpu is None:
                assert "feature.node.kubernetes.io/pci-10de.present" not in labels
                assert "nvidia.com/gpu" not in node.status.capacity
                continue
            assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
            if prof.operator == "none":
                assert node.status.capacity["nvidia.com/gpu"] == str(pool.gpu.count)
                assert node.status.allocatable["nvidia.com/gpu"] == str(pool.gpu.count)
            for k, v in pool.labels.items():
                assert labels[k] == v


def test_control_plane_node_is_tainted(testbed):
    prof = profiles.load(testbed.profile)
    nodes = _nodes(testbed)
    cps = [n for p in prof.pools if p.role == "control-plane" for n in p.node_names()]
    assert cps
    for name in cps:
        taints = {(t.key, t.effect) for t in nodes[name].spec.taints or []}
        assert ("node-role.kubernetes.io/control-plane", "NoSchedule") in taints
        assert "node-role.kubernetes.io/control-plane" in nodes[name].metadata.labels


def test_version_is_real(testbed):
    from kubernetes import client

    v = client.VersionApi(testbed.api_client()).get_code()
    assert v.git_version.startswith("v1.") and v.git_version != "v0.0.0", v.git_version


def test_node_not_ready_label_keeps_node_not_ready(testbed):
    """The simulated operator's node-not-ready fault: kwok leaves a labelled NotReady node alone."""
    import datetime
    import time

    from kubernetes import client

    core = client.CoreV1Api(testbed.api_client())
    prof = profiles.load(testbed.profile)
    name = next(p for p in prof.pools if p.role == "worker" and p.gpu is None).node_names()[0]

    def ready():
        return next(c.status for c in core.read_node(name).status.conditions if c.type == "Ready")

    core.patch_node(name, {"metadata": {"labels": {"sim.gpuops.io/node-not-ready": "true"}}})
    try:
        t = datetime.datetime.now(datetime.timezone.utc).isoformat()
        core.patch_node_status(
            name,
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "False",
                            "reason": "KubeletNotReady",
                            "message": "test",
                            "lastHeartbeatTime": t,
                            "lastTransitionTime": t,
                        }
                    ]
                }
            },
        )
        time.sleep(3)
        assert ready() == "False"
    finally:
        core.patch_node(name, {"metadata": {"labels": {"sim.gpuops.io/node-not-ready": None}}})
    deadline = time.monotonic() + 30
    while ready() != "True":
        assert time.monotonic() < deadline, "node did not become Ready again"
        time.sleep(0.5)
