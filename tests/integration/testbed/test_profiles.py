"""Profile validation (no cluster needed): every mistake is one message naming the offending key."""

import pytest

from tests.sim import profiles

BASE = {"name": "x", "pools": [{"name": "g", "count": 1, "gpu": {"product": "Tesla-T4", "count": 1}}]}


def _with(**pool):
    return {"name": "x", "pools": [{"name": "g", "count": 1, **pool}]}


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({**BASE, "colour": "red"}, "unknown key 'colour'"),
        (_with(gpu={"product": "T4", "count": 1, "mem": 1}), "unknown key 'pools[g].gpu.mem'"),
        (_with(os={"id": "ubuntu", "version": "22.04"}), "unknown key 'pools[g].os.version'"),
        (_with(taints=[{"key": "a", "effect": "Sometimes"}]), "pools[g].taints[0].effect"),
        (_with(cpu="lots"), "not a Kubernetes quantity"),
        (_with(role="boss"), "pools[g].role"),
        ({"name": "x", "pools": []}, "non-empty list"),
        ({"pools": BASE["pools"]}, "missing required key 'name'"),
        ({**BASE, "operator": "real"}, "'operator'"),
        ({**BASE, "kwok": {"lease": 1}}, "unknown key 'kwok.lease'"),
        ({"name": "x", "pools": [{"name": "g", "count": -1}]}, "pools[g].count"),
        ({"name": "x", "pools": [{"name": "g", "count": 1}, {"name": "g", "count": 1}]}, "duplicate pool name"),
    ],
)
def test_bad_profiles_are_rejected_with_the_key(data, fragment):
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.parse(data)
    msg = str(exc.value)
    assert fragment in msg and "\n" not in msg


def test_node_manifest_for_gpu_and_control_plane_pools():
    prof = profiles.load("ci")
    gpu = next(p for p in prof.pools if p.gpu)
    node = profiles.node_manifest(gpu, "h100-0", set_gpu_capacity=True)
    assert node["status"]["capacity"]["nvidia.com/gpu"] == str(gpu.gpu.count)
    assert node["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert "nvidia.com/gpu" not in profiles.node_manifest(gpu, "h100-0", set_gpu_capacity=False)["status"]["capacity"]
    cp = next(p for p in prof.pools if p.role == "control-plane")
    taints = profiles.node_manifest(cp, "cp-0", True)["spec"]["taints"]
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in taints


def test_scale_profile_has_1000_gpu_nodes():
    prof = profiles.load("scale-1000")
    assert sum(p.count for p in prof.gpu_pools()) == 1000
