"""What the simulated DRA driver for NVIDIA GPUs publishes: devices built from a node's NVML fixture, the node's
ResourceSlices (with the DRA faults applied), the DeviceClasses, and the GPUCluster status (pure; no API calls).

The device attributes and capacities follow the ones kubernetes-sigs/dra-driver-nvidia-gpu publishes (written
from its documentation, not copied): a full GPU is `gpu-<minor>` with `type=gpu`, a MIG device is
`gpu-<parent minor>-mig-<GI profile id>-<placement start>-<placement size>` with `type=mig`. Version attributes
must be semver 2.0 for the API server, so NVML's "570.124.06" is published as "570.124.6" (leading zeros
dropped, as the driver's semver parsing does).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from . import logic as L

DRIVER = "gpu.nvidia.com"
NVML_PROFILES = Path(__file__).resolve().parents[1] / "nvml" / "profiles"
ANN_NVML_PROFILE = L.SIM + "nvml-profile"
HASH = L.SIM + "spec-hash"
TAINT = {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}

# faults a node annotation (sim.gpuops.io/fault) injects into the DRA driver's node side
NODE_FAULTS = (
    "dra-slice-missing",
    "dra-fewer-devices",
    "dra-device-taint",
    "dra-plugin-crashloop",
    "dra-stale-generation",
)
# a fault the GPUCluster's own sim.gpuops.io/fault annotation injects (DeviceClasses are cluster-scoped)
CLUSTER_FAULTS = ("dra-deviceclass-missing",)

# NVML's nvmlDeviceArchitecture_t
ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
# MIG profile by slice count g: (GPU instance profile id, memory slices, decoders, jpeg/ofa engines)
MIG_PROFILES = {1: (0, 1, 0, 0), 2: (1, 2, 1, 0), 3: (2, 4, 2, 0), 4: (3, 4, 2, 0), 7: (4, 8, 5, 1)}
SMS_PER_SLICE = {"Ampere": 14, "Hopper": 16, "Blackwell": 20}


# ---------------------------------------------------------------------------------------------- NVML fixture


def load_fixture(name: str) -> dict:
    """The flat NVML fixture tests/sim/nvml/profiles/<name>.yml (see tests/sim/nvml/README.md), its ``include``
    read under its own keys as the fake library reads it."""
    data = yaml.safe_load((NVML_PROFILES / f"{name}.yml").read_text()) or {}
    include = data.pop("include", None)
    return {**load_fixture(Path(include).stem), **data} if include else data


def fixture_gpus(fixture: dict) -> list[dict]:
    """One dict per GPU: the `gpu.*.<field>` defaults overlaid with `gpu.<i>.<field>`."""
    defaults = {k[len("gpu.*.") :]: v for k, v in fixture.items() if str(k).startswith("gpu.*.")}
    out = []
    for i in range(int(fixture.get("gpu_count") or 0)):
        prefix = f"gpu.{i}."
        gpu = dict(defaults)
        gpu.update({k[len(prefix) :]: v for k, v in fixture.items() if str(k).startswith(prefix)})
        gpu["index"] = i
        out.append(gpu)
    return out


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def semver(version) -> str:
    """NVML's dotted version as semver 2.0: three numeric parts, leading zeros dropped."""
    parts = [str(int(p)) for p in str(version).split(".") if p.isdigit()][:3]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def cuda_semver(cuda_version) -> str:
    """NVML's CUDA driver version integer (12080) as semver (12.8.0)."""
    v = _int(cuda_version)
    return f"{v // 1000}.{(v % 1000) // 10}.0"


def pci_bus_id(nvml_bus_id: str) -> str:
    """NVML's "00000000:18:00.0" in the sysfs form the standard attribute uses: "0000:18:00.0"."""
    domain, _sep, rest = str(nvml_bus_id).partition(":")
    return f"{domain[-4:]}:{rest}".lower()


def nvml_device_count(fixture: dict) -> int:
    """What NVML enumerates as allocatable: each MIG device of a MIG-enabled GPU, else the GPU itself."""
    return sum(
        max(_int(g.get("mig_devices")), 1) if _int(g.get("mig_current")) == 1 else 1 for g in fixture_gpus(fixture)
    )


# ---------------------------------------------------------------------------------------------- devices


def _common(gpu: dict, fixture: dict) -> dict:
    name = str(gpu.get("name") or "NVIDIA GPU")
    return {
        "productName": {"string": name},
        "brand": {"string": "Tesla" if name.startswith("Tesla") else "Nvidia"},
        "architecture": {"string": ARCHITECTURES.get(_int(gpu.get("architecture")), "Unknown")},
        "cudaComputeCapability": {"version": f"{_int(gpu.get('cc_major'))}.{_int(gpu.get('cc_minor'))}.0"},
        "driverVersion": {"version": semver(fixture.get("driver_version", "0"))},
        "cudaDriverVersion": {"version": cuda_semver(fixture.get("cuda_version"))},
        "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(gpu.get("bus_id", "00000000:00:00.0"))},
    }


def gpu_device(gpu: dict, fixture: dict) -> dict:
    i = gpu["index"]
    attrs = {"type": {"string": "gpu"}, "uuid": {"string": str(gpu.get("uuid", ""))}}
    attrs.update(_common(gpu, fixture))
    attrs.update({"index": {"int": i}, "minor": {"int": i}})
    return {
        "name": f"gpu-{i}",
        "attributes": attrs,
        "capacity": {"memory": {"value": str(_int(gpu.get("memory_total")))}},
    }


def mig_devices(gpu: dict, fixture: dict) -> list[dict]:
    count = _int(gpu.get("mig_devices"))
    slices = {7: 1, 3: 2, 2: 3, 1: 7}.get(count, 1)
    profile_id, mem_slices, decoders, engines = MIG_PROFILES[slices]
    memory = _int(gpu.get("mig_memory_total"))
    profile = f"{slices}g.{round(memory / 10**9)}gb"
    sms = SMS_PER_SLICE.get(ARCHITECTURES.get(_int(gpu.get("architecture")), ""), 14) * slices
    parent = str(gpu.get("uuid", ""))
    out = []
    for j in range(count):
        start = j * mem_slices
        attrs = {
            "type": {"string": "mig"},
            "uuid": {"string": f"MIG-{parent.removeprefix('GPU-')}-{j}"},
            "parentUUID": {"string": parent},
            "profile": {"string": profile},
        }
        attrs.update(_common(gpu, fixture))
        capacity = {
            "multiprocessors": sms,
            "copyEngines": slices,
            "decoders": decoders,
            "encoders": 0,
            "jpegEngines": engines,
            "ofaEngines": engines,
            "memory": memory,
        }
        capacity.update({f"memorySlice{k}": 1 for k in range(start, start + mem_slices)})
        out.append(
            {
                "name": f"gpu-{gpu['index']}-mig-{profile_id}-{start}-{mem_slices}",
                "attributes": attrs,
                "capacity": {k: {"value": str(v)} for k, v in capacity.items()},
            }
        )
    return out


def devices(fixture: dict) -> list[dict]:
    """Every device the driver publishes for a node: MIG devices of MIG-enabled GPUs, full GPUs otherwise."""
    out = []
    for gpu in fixture_gpus(fixture):
        if _int(gpu.get("mig_current")) == 1 and _int(gpu.get("mig_devices")) > 0:
            out.extend(mig_devices(gpu, fixture))
        else:
            out.append(gpu_device(gpu, fixture))
    return out


def devices_from_annotations(node: dict) -> list[dict]:
    """Without an NVML fixture: one GPU per sim.gpuops.io/gpu-count, uuids as the DCGM stand-in makes them."""
    info = L.gpu_info(node)
    fixture = {"driver_version": "580.105.08", "cuda_version": 13000}
    gpus = [
        {
            "index": i,
            "name": info["product"].replace("-", " "),
            "uuid": L.gpu_uuid(L.name(node), i),
            "memory_total": info["memory"] * 1024 * 1024,
            "bus_id": f"00000000:{0x18 + i:02X}:00.0",
        }
        for i in range(info["count"])
    ]
    return [gpu_device(g, fixture) for g in gpus]


def node_devices(node: dict) -> list[dict]:
    profile = L.annotations(node).get(ANN_NVML_PROFILE)
    if profile and (NVML_PROFILES / f"{profile}.yml").is_file():
        return devices(load_fixture(profile))
    return devices_from_annotations(node)


# ---------------------------------------------------------------------------------------------- slices


def spec_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def slice_name(node_name: str, stale: bool = False) -> str:
    return f"{node_name}-{DRIVER}" + ("-stale" if stale else "")


def desired_slices(node_name: str, devs: list[dict], faults: set, current: dict | None) -> dict:
    """{slice name: spec} the node's kubelet plugin keeps published, faults applied. ``current`` is the node's
    main slice as it is now (or None): its generation is kept while the content is unchanged, bumped otherwise."""
    if "dra-slice-missing" in faults:
        return {}
    devs = [dict(d) for d in devs]
    if "dra-fewer-devices" in faults and devs:
        devs = devs[:-1]
    if "dra-device-taint" in faults and devs:
        devs[0]["taints"] = [dict(TAINT)]
    stale = "dra-stale-generation" in faults
    spec = {
        "driver": DRIVER,
        "nodeName": node_name,
        "pool": {"name": node_name, "resourceSliceCount": 2 if stale else 1},
        "devices": devs,
    }
    generation = _generation(current, spec)
    spec["pool"]["generation"] = generation
    out = {slice_name(node_name): spec}
    if stale:
        # the previous generation's slice, left behind by a plugin that died half-way through republishing
        old = {**spec, "pool": {"name": node_name, "resourceSliceCount": 1, "generation": generation - 1}}
        out[slice_name(node_name, stale=True)] = old
    return out


def _generation(current: dict | None, spec: dict) -> int:
    if current is None:
        return 2 if spec["pool"]["resourceSliceCount"] > 1 else 1
    gen = int(((current.get("spec") or {}).get("pool") or {}).get("generation") or 1)
    if L.annotations(current).get(HASH) == stamp_hash(spec):
        return gen
    return gen + 1


def slice_body(name: str, spec: dict, node: dict) -> dict:
    """A ResourceSlice owned by its Node (the kubelet wipes a node's slices with it), with the content hash the
    reconciler compares (the API server stamps taints with timeAdded, so the object itself never compares equal)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "labels": {L.SIM + "managed": "true"},
            "annotations": {HASH: stamp_hash(spec)},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": L.name(node), "uid": node["metadata"].get("uid")}
            ],
        },
        "spec": spec,
    }


def stamp_hash(spec: dict) -> str:
    """The hash slice_body() stamps for ``spec`` (generation left out: it follows from the content)."""
    return spec_hash({**spec, "pool": {k: v for k, v in spec["pool"].items() if k != "generation"}})


# ---------------------------------------------------------------------------------------------- classes, status


def device_class(name: str, device_type: str) -> dict:
    expr = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{device_type}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {L.SIM + "managed": "true"}},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def gpucluster_state(cluster_policy: str | None, ds_status: dict) -> tuple[str, str, str]:
    """(state, reason, message) of the active GPUCluster, worded as the operator writes them.

    ds_status: {state name: (desired, ready)} for the GPUCluster's operand DaemonSets."""
    if cluster_policy:
        return (
            "notReady",
            "PrerequisiteNotMet",
            f'A ClusterPolicy CR "{cluster_policy}" exists; a ClusterPolicy CR and GPUCluster CR may not exist '
            "at the same time",
        )
    waiting = sorted(name for name, (desired, ready) in ds_status.items() if ready < desired)
    if waiting:
        return (
            "notReady",
            "OperandNotReady",
            f"Waiting for operand pods to be ready; states not ready: [{' '.join(waiting)}]",
        )
    return "ready", "Reconciled", "All resources have been successfully reconciled"
