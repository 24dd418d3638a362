"""Cluster profiles for the test bed: strict loading and validation.

A profile is a YAML mapping; see docs/testbed.md for the schema. Unknown keys are rejected with the key's
full path so that a typo never silently changes the cluster.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"

_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P)?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class ProfileError(ValueError):
    """A profile is unusable; the message is one line naming the cause."""


@dataclass
class Gpu:
    product: str
    count: int
    memory_mib: int
    mig_capable: bool = False


@dataclass
class Pool:
    name: str
    count: int
    role: str = "worker"
    gpu: Gpu | None = None
    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    os_id: str = "ubuntu"
    os_version_id: str = "22.04"
    kernel: str = "5.15.0-105-generic"
    host_tree: str | None = None
    nvml_profile: str | None = None
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    taints: list = field(default_factory=list)

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass
class RealNode:
    """This machine joined to the bed as one real node (tests/sim/realnode): kubelet, containerd and runc, with
    the GPUs of fake NVML fixture ``nvml_profile`` (tests/sim/nvml/profiles)."""

    name: str = "gpu-real-0"
    nvml_profile: str = "h100-sxm-8-r580"
    labels: dict = field(default_factory=dict)


@dataclass
class Profile:
    name: str
    description: str
    operator: str
    pools: list[Pool]
    operator_mode: str = "clusterpolicy"
    node_lease_duration_seconds: int = 40
    heartbeat_interval_seconds: int = 60
    node_monitor_grace_period_seconds: int = 120
    create_parallelism: int = 16
    real_node: RealNode | None = None
    source: str = ""

    @property
    def node_count(self) -> int:
        return sum(p.count for p in self.pools)

    def gpu_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.gpu is not None]


def _check_keys(obj, allowed: set[str], where: str, required: set[str] = frozenset()) -> None:
    if not isinstance(obj, dict):
        raise ProfileError(f"profile: {where or 'top level'} must be a mapping, got {type(obj).__name__}")
    for k in obj:
        if k not in allowed:
            path = f"{where}.{k}" if where else str(k)
            raise ProfileError(f"profile: unknown key '{path}' (allowed: {', '.join(sorted(allowed))})")
    for k in required:
        if k not in obj:
            path = f"{where}.{k}" if where else k
            raise ProfileError(f"profile: missing required key '{path}'")


def _int(v, where: str, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ProfileError(f"profile: '{where}' must be an integer >= {minimum}, got {v!r}")
    return v


def _str(v, where: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ProfileError(f"profile: '{where}' must be a string, got {v!r}")
    return str(v)


def _quantity(v, where: str) -> str:
    s = _str(v, where)
    if not _QUANTITY.match(s):
        raise ProfileError(f"profile: '{where}' is not a Kubernetes quantity: {s!r}")
    return s


def _str_map(v, where: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ProfileError(f"profile: '{where}' must be a mapping of strings")
    return {str(k): "" if val is None else _str(val, f"{where}.{k}") for k, val in v.items()}


POOL_KEYS = {
    "name",
    "count",
    "role",
    "gpu",
    "cpu",
    "memory",
    "pods",
    "os",
    "kernel",
    "host_tree",
    "nvml_profile",
    "labels",
    "annotations",
    "taints",
}
TOP_KEYS = {
    "name",
    "description",
    "operator",
    "operator_mode",
    "kwok",
    "controller_manager",
    "pools",
    "create_parallelism",
    "real_node",
}
OPERATOR_MODES = ("clusterpolicy", "gpucluster")


def parse(data, source: str = "") -> Profile:
    _check_keys(data, TOP_KEYS, "", required={"name", "pools"})
    operator = data.get("operator", "none")
    if operator not in ("none", "simulated"):
        raise ProfileError(f"profile: 'operator' must be 'none' or 'simulated', got {operator!r}")
    mode = data.get("operator_mode", "clusterpolicy")
    if mode not in OPERATOR_MODES:
        raise ProfileError(f"profile: 'operator_mode' must be one of {', '.join(OPERATOR_MODES)}, got {mode!r}")
    prof = Profile(
        name=_str(data["name"], "name"),
        description=str(data.get("description", "")),
        operator=operator,
        pools=[],
        operator_mode=mode,
        source=source,
    )
    kw = data.get("kwok") or {}
    _check_keys(kw, {"node_lease_duration_seconds", "heartbeat_interval_seconds"}, "kwok")
    if "node_lease_duration_seconds" in kw:
        prof.node_lease_duration_seconds = _int(
            kw["node_lease_duration_seconds"], "kwok.node_lease_duration_seconds", 0
        )
    if "heartbeat_interval_seconds" in kw:
        prof.heartbeat_interval_seconds = _int(kw["heartbeat_interval_seconds"], "kwok.heartbeat_interval_seconds", 1)
    cm = data.get("controller_manager") or {}
    _check_keys(cm, {"node_monitor_grace_period_seconds"}, "controller_manager")
    if "node_monitor_grace_period_seconds" in cm:
        prof.node_monitor_grace_period_seconds = _int(
            cm["node_monitor_grace_period_seconds"], "controller_manager.node_monitor_grace_period_seconds", 10
        )
    if "create_parallelism" in data:
        prof.create_parallelism = _int(data["create_parallelism"], "create_parallelism", 1)
    if data.get("real_node") is not None:
        prof.real_node = _real_node(data["real_node"])
    pools = data["pools"]
    if not isinstance(pools, list) or not pools:
        raise ProfileError("profile: 'pools' must be a non-empty list")
    seen = set()
    for i, p in enumerate(pools):
        where = f"pools[{i}]"
        _check_keys(p, POOL_KEYS, where, required={"name", "count"})
        name = _str(p["name"], f"{where}.name")
        if not _NAME.match(name):
            raise ProfileError(f"profile: '{where}.name' must be a DNS label, got {name!r}")
        if name in seen:
            raise ProfileError(f"profile: duplicate pool name {name!r}")
        seen.add(name)
        where = f"pools[{name}]"
        pool = Pool(name=name, count=_int(p["count"], f"{where}.count", 0))
        role = p.get("role", "worker")
        if role not in ("worker", "control-plane"):
            raise ProfileError(f"profile: '{where}.role' must be 'worker' or 'control-plane', got {role!r}")
        pool.role = role
        if p.get("gpu") is not None:
            g = p["gpu"]
            _check_keys(
                g, {"product", "count", "memory_mib", "mig_capable"}, f"{where}.gpu", required={"product", "count"}
            )
            pool.gpu = Gpu(
                product=_str(g["product"], f"{where}.gpu.product"),
                count=_int(g["count"], f"{where}.gpu.count", 0),
                memory_mib=_int(g.get("memory_mib", 0), f"{where}.gpu.memory_mib", 0),
                mig_capable=bool(g.get("mig_capable", False)),
            )
        for key in ("cpu", "memory", "pods"):
            if key in p:
                setattr(pool, key, _quantity(p[key], f"{where}.{key}"))
        if "os" in p:
            _check_keys(p["os"], {"id", "version_id"}, f"{where}.os", required={"id", "version_id"})
            pool.os_id = _str(p["os"]["id"], f"{where}.os.id")
            pool.os_version_id = _str(p["os"]["version_id"], f"{where}.os.version_id")
        if "kernel" in p:
            pool.kernel = _str(p["kernel"], f"{where}.kernel")
        for key in ("host_tree", "nvml_profile"):
            if p.get(key) is not None:
                setattr(pool, key, _str(p[key], f"{where}.{key}"))
        pool.labels = _str_map(p.get("labels"), f"{where}.labels")
        pool.annotations = _str_map(p.get("annotations"), f"{where}.annotations")
        taints = p.get("taints") or []
        if not isinstance(taints, list):
            raise ProfileError(f"profile: '{where}.taints' must be a list")
        for j, t in enumerate(taints):
            _check_keys(t, {"key", "value", "effect"}, f"{where}.taints[{j}]", required={"key", "effect"})
            if t["effect"] not in _EFFECTS:
                raise ProfileError(f"profile: '{where}.taints[{j}].effect' must be one of {', '.join(_EFFECTS)}")
            pool.taints.append({k: str(v) for k, v in t.items()})
        prof.pools.append(pool)
    return prof


def _real_node(data) -> RealNode:
    _check_keys(data, {"name", "nvml_profile", "labels"}, "real_node")
    node = RealNode()
    if "name" in data:
        node.name = _str(data["name"], "real_node.name")
        if not _NAME.match(node.name):
            raise ProfileError(f"profile: 'real_node.name' must be a DNS label, got {node.name!r}")
    if "nvml_profile" in data:
        node.nvml_profile = _str(data["nvml_profile"], "real_node.nvml_profile")
    node.labels = _str_map(data.get("labels"), "real_node.labels")
    return node


def resolve(name_or_path: str) -> Path:
    """A bare name means tests/sim/profiles/<name>.yml; anything with a slash or .yml suffix is a path."""
    if os.sep in name_or_path or name_or_path.endswith((".yml", ".yaml")):
        path = Path(name_or_path).expanduser().resolve()
    else:
        path = PROFILE_DIR / f"{name_or_path}.yml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.yml")))
        raise ProfileError(f"profile: no profile {name_or_path!r} (known: {known}; or pass a path to a .yml file)")
    return path


def load(name_or_path: str) -> Profile:
    path = resolve(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(f"profile: {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return parse(data, source=str(path))


def node_manifest(pool: Pool, name: str, set_gpu_capacity: bool) -> dict:
    """The Node object (spec and status) for one simulated node."""
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "type": "kwok",
        "gpuops.io/pool": pool.name,
        "feature.node.kubernetes.io/kernel-version.full": pool.kernel,
        "feature.node.kubernetes.io/system-os_release.ID": pool.os_id,
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": pool.os_version_id,
    }
    taints = [dict(t) for t in pool.taints]
    if pool.role == "control-plane":
        labels["node-role.kubernetes.io/control-plane"] = ""
        if not any(t["key"] == "node-role.kubernetes.io/control-plane" for t in taints):
            taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
    if pool.gpu is not None:
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
    labels.update(pool.labels)
    capacity = {"cpu": pool.cpu, "memory": pool.memory, "pods": pool.pods, "ephemeral-storage": "500Gi"}
    if pool.gpu is not None and set_gpu_capacity:
        capacity["nvidia.com/gpu"] = str(pool.gpu.count)
    annotations = {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}
    if pool.gpu is not None:
        # What the simulated operator reads in place of the GPUs a real driver would find (docs/simulated-operator.md).
        annotations.update(
            {
                "sim.gpuops.io/gpu-product": pool.gpu.product,
                "sim.gpuops.io/gpu-count": str(pool.gpu.count),
                "sim.gpuops.io/gpu-memory": str(pool.gpu.memory_mib),
                "sim.gpuops.io/mig-capable": "true" if pool.gpu.mig_capable else "false",
            }
        )
        if pool.nvml_profile:  # the devices the simulated DRA driver publishes for the node
            annotations["sim.gpuops.io/nvml-profile"] = pool.nvml_profile
    annotations.update(pool.annotations)
    os_pretty = f"{pool.os_id} {pool.os_version_id}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kernelVersion": pool.kernel,
                "osImage": os_pretty,
                "containerRuntimeVersion": "containerd://1.7.27",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "v1.36.3",
                "machineID": "",
                "bootID": "",
                "systemUUID": "",
            },
        },
    }
