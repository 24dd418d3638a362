"""Pure reconciliation logic of the simulated GPU Operator (no API calls; unit-tested in tests/unit/sim).

Objects are plain dicts as the Kubernetes API returns them (camelCase keys).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import uuid

# ---------------------------------------------------------------------------------------------- names

SIM = "sim.gpuops.io/"
ANN_PRODUCT = SIM + "gpu-product"
ANN_COUNT = SIM + "gpu-count"
ANN_MEMORY = SIM + "gpu-memory"
ANN_FAMILY = SIM + "gpu-family"
ANN_MIG_CAPABLE = SIM + "mig-capable"
ANN_FAULT = SIM + "fault"
ANN_MIG_APPLIED = SIM + "mig-applied"

FAULTS = (
    "driver-crash-kernel-headers",
    "driver-crash-nouveau",
    "driver-crash-secureboot",
    "toolkit-no-runtime",
    "device-plugin-not-advertising",
    "xid79",
    "validator-failing",
    "node-not-ready",
    "upgrade-failed",
    "mig-failed",
    # GPUCluster mode (dra_devices.NODE_FAULTS; dra-deviceclass-missing goes on the GPUCluster instead)
    "dra-slice-missing",
    "dra-fewer-devices",
    "dra-device-taint",
    "dra-plugin-crashloop",
    "dra-stale-generation",
)
DRIVER_FAULTS = {
    # fault → (last log line of nvidia-driver-ctr, termination message)
    "driver-crash-kernel-headers": (
        "Could not resolve Linux kernel version",
        "Unable to find a match: kernel-headers-{kernel} kernel-devel-{kernel}\nCould not resolve Linux kernel version",
    ),
    "driver-crash-nouveau": (
        "ERROR: Unable to load the kernel module 'nvidia.ko'.",
        "NVRM: Failed to enable MSI-X.\nERROR: Unable to load the kernel module 'nvidia.ko'. This happens most "
        "frequently when this kernel module was built against the wrong or improperly configured kernel "
        "sources, or when another driver, such as nouveau, is present and prevents the NVIDIA kernel module "
        "from obtaining ownership of the NVIDIA device(s).",
    ),
    "driver-crash-secureboot": (
        "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
        "Loading of unsigned module is rejected\nmodprobe: ERROR: could not insert 'nvidia': "
        "Key was rejected by service",
    ),
}
# the driver an upgrade restarts fails to load (fault upgrade-failed, from pod-restart-required on)
UPGRADE_FAILED_CRASH = (
    "ERROR: Unable to load the kernel module 'nvidia.ko'.",
    "modprobe: ERROR: could not insert 'nvidia': Invalid argument\nERROR: Unable to load the kernel module "
    "'nvidia.ko'.",
)
CRASHES = {**DRIVER_FAULTS, "upgrade-failed": UPGRADE_FAILED_CRASH}
NO_RUNTIME_MSG = (
    'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
    'no runtime for "nvidia" is configured'
)

GPU_NODE_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
DEPLOY = "nvidia.com/gpu.deploy."
#: The test bed's real node (tests/sim/realnode): its kubelet and device plugin do what the simulator plays elsewhere.
REAL_NODE = "sim.gpuops.io/real-node"
UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_SKIP = "nvidia.com/gpu-driver-upgrade.skip"
DRIVER_OWNER = "nvidia.com/gpu-operator.driver.owner"
# 26.7.0 and later: the driver config digest on the driver pod template, and the label third-party GPU clients select
DIGEST_ENV = "DRIVER_CONFIG_DIGEST"
CLIENT_LABEL = DEPLOY + "client"

UPGRADE_STATES = (
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "drain-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
    "upgrade-failed",
)
IN_PROGRESS = frozenset(UPGRADE_STATES[1:8])
# where the upgrade controller has restarted (or is restarting) the node's driver pod
RESTARTED_STATES = ("pod-restart-required", "upgrade-failed")
#: From the old driver pod's deletion on: the new driver pod may appear before the state says pod-restart-required.
RESTARTING_STATES = ("pod-deletion-required", "drain-required") + RESTARTED_STATES
#: The pod condition kwok's pod-ready stage waits for on a driver pod (the simulator "loads" the driver first).
DRIVER_GATE = "PodReadyToStartContainers"


def driver_gated(pod: dict) -> bool:
    """True for a driver pod kwok has not started yet because the simulator has not "loaded" it."""
    status = pod.get("status") or {}
    return status.get("phase", "Pending") == "Pending" and not any(
        c.get("type") == DRIVER_GATE and c.get("status") == "True" for c in status.get("conditions") or []
    )


# operand key → (DaemonSet name, deploy label component, ClusterPolicy spec key or None = always)
OPERANDS = (
    ("driver", "nvidia-driver-daemonset", "driver", "driver"),
    ("toolkit", "nvidia-container-toolkit-daemonset", "container-toolkit", "toolkit"),
    ("device-plugin", "nvidia-device-plugin-daemonset", "device-plugin", "devicePlugin"),
    ("gfd", "gpu-feature-discovery", "gpu-feature-discovery", "gfd"),
    ("dcgm", "nvidia-dcgm", "dcgm", "dcgm"),
    ("dcgm-exporter", "nvidia-dcgm-exporter", "dcgm-exporter", "dcgmExporter"),
    ("validator", "nvidia-operator-validator", "operator-validator", None),
    ("mig-manager", "nvidia-mig-manager", "mig-manager", "migManager"),
    ("node-status-exporter", "nvidia-node-status-exporter", "node-status-exporter", "nodeStatusExporter"),
)
DEFAULT_ENABLED = {"dcgm": False, "nodeStatusExporter": False}
DEPLOY_COMPONENTS = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
)

FAMILIES = (
    ("H100", "hopper"),
    ("H200", "hopper"),
    ("GH200", "hopper"),
    ("B200", "blackwell"),
    ("GB200", "blackwell"),
    ("A100", "ampere"),
    ("A30", "ampere"),
    ("A10", "ampere"),
    ("L40", "ada-lovelace"),
    ("L4", "ada-lovelace"),
    ("T4", "turing"),
    ("V100", "volta"),
)
COMPUTE = {
    "hopper": (9, 0),
    "blackwell": (10, 0),
    "ampere": (8, 0),
    "ada-lovelace": (8, 9),
    "turing": (7, 5),
    "volta": (7, 0),
}


# ---------------------------------------------------------------------------------------------- helpers


def now_iso() -> str:
    """Now, as the API server writes timestamps (``2026-12-03T10:00:00Z``)."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def is_gpu_node(node: dict) -> bool:
    lab = labels(node)
    return any(lab.get(k) == "true" for k in GPU_NODE_LABELS)


def faults(node: dict) -> set[str]:
    raw = annotations(node).get(ANN_FAULT, "")
    return {f.strip() for f in raw.split(",") if f.strip()}


def spec_enabled(spec: dict, key: str | None) -> bool:
    if key is None:
        return True
    return bool((spec.get(key) or {}).get("enabled", DEFAULT_ENABLED.get(key, True)))


def node_ready(node: dict) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def pod_ready(pod: dict) -> bool:
    st = pod.get("status") or {}
    if st.get("phase") != "Running" or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])


def gpu_info(node: dict) -> dict:
    """Simulated hardware facts from the test bed's node annotations (see docs/simulated-operator.md)."""
    ann = annotations(node)
    product = ann.get(ANN_PRODUCT, "NVIDIA-GPU")
    try:
        count = int(ann.get(ANN_COUNT, "0"))
    except ValueError:
        count = 0
    try:
        memory = int(ann.get(ANN_MEMORY, "0"))
    except ValueError:
        memory = 0
    family = ann.get(ANN_FAMILY) or guess_family(product)
    mig = ann.get(ANN_MIG_CAPABLE, "").lower() == "true"
    return {"product": product, "count": count, "memory": memory, "family": family, "mig_capable": mig}


def guess_family(product: str) -> str:
    up = product.upper()
    for key, fam in FAMILIES:
        if key in up:
            return fam
    return "unknown"


def gpu_uuid(node_name: str, index: int) -> str:
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node_name}.{index}.gpuops.sim"))


def driver_version_labels(version: str) -> dict:
    parts = (version or "").split(".")
    out = {"nvidia.com/cuda.driver-version.full": version}
    for i, k in enumerate(("major", "minor", "revision")):
        if i < len(parts):
            out[f"nvidia.com/cuda.driver-version.{k}"] = parts[i]
    for i, k in enumerate(("major", "minor", "rev")):
        if i < len(parts):
            out[f"nvidia.com/cuda.driver.{k}"] = parts[i]
    try:
        major = int(parts[0])
    except (ValueError, IndexError):
        return out
    cuda = (13, 0) if major >= 580 else (12, 8) if major >= 570 else (12, 4) if major >= 550 else (12, 2)
    out.update(
        {
            "nvidia.com/cuda.runtime-version.major": str(cuda[0]),
            "nvidia.com/cuda.runtime-version.minor": str(cuda[1]),
            "nvidia.com/cuda.runtime-version.full": f"{cuda[0]}.{cuda[1]}",
            "nvidia.com/cuda.runtime.major": str(cuda[0]),
            "nvidia.com/cuda.runtime.minor": str(cuda[1]),
        }
    )
    return out


def image_version(image: str) -> str:
    """Driver version from a driver image `repo/driver:<version>-<os>`."""
    tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
    m = re.match(r"^(\d+\.\d+(?:\.\d+)?)", tag)
    return m.group(1) if m else tag


def os_tag(node: dict) -> str:
    lab = labels(node)
    os_id = lab.get("feature.node.kubernetes.io/system-os_release.ID", "ubuntu")
    ver = lab.get("feature.node.kubernetes.io/system-os_release.VERSION_ID", "22.04")
    if os_id in ("rhel", "rocky"):
        ver = ver.split(".")[0]
    return f"{os_id}{ver}"


# ---------------------------------------------------------------------------------------------- MIG

MIG_SLICES = re.compile(r"^(\d)g\.(\d+)gb$")


def mig_layout(config: str, gpu: dict, strategy: str) -> dict | None:
    """Resources (name → count) for a mig-parted style config name, or None if the config is invalid."""
    n = gpu["count"]
    if config in ("all-disabled", "", None):
        return {"nvidia.com/gpu": n}
    if config == "all-balanced":
        if strategy != "mixed":
            return None
        per = max(gpu["memory"] // 1024 // 8, 5) if gpu["memory"] else 10
        return {
            f"nvidia.com/mig-1g.{per}gb": 2 * n,
            f"nvidia.com/mig-2g.{per * 2}gb": n,
            f"nvidia.com/mig-3g.{per * 4}gb": n,
            "nvidia.com/gpu": 0,
        }
    if config.startswith("all-"):
        prof = config[4:]
        m = MIG_SLICES.match(prof)
        if not m:
            return None
        g = int(m.group(1))
        if g not in (1, 2, 3, 4, 7):
            return None
        per_gpu = {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}[g]
        if strategy == "mixed":
            return {f"nvidia.com/mig-{prof}": per_gpu * n, "nvidia.com/gpu": 0}
        return {"nvidia.com/gpu": per_gpu * n}
    return None


# ---------------------------------------------------------------------------------------------- node labels


def desired_node_labels(node: dict, spec: dict, driver_version: str | None) -> dict:
    """Labels the operator, GFD and the device plugin put on a node: {key: value-or-None (remove)}."""
    lab = labels(node)
    out: dict = {}
    if not is_gpu_node(node):
        if lab.get("nvidia.com/gpu.present") == "true":
            out["nvidia.com/gpu.present"] = "false"
        return out
    gpu = gpu_info(node)
    out["nvidia.com/gpu.present"] = "true"
    operands_off = lab.get(DEPLOY + "operands") == "false"
    comps = list(DEPLOY_COMPONENTS) + (["mig-manager"] if gpu["mig_capable"] else [])
    for comp in comps:
        key = DEPLOY + comp
        cur = lab.get(key)
        if operands_off:
            if cur == "true":
                out[key] = "false"
        elif cur is None:
            out[key] = "true"
    strategy = (spec.get("mig") or {}).get("strategy", "single")
    if spec_enabled(spec, "gfd"):
        product = gpu["product"]
        mig_cfg = lab.get("nvidia.com/mig.config", "all-disabled")
        if (
            gpu["mig_capable"]
            and strategy == "single"
            and mig_cfg.startswith("all-")
            and mig_cfg != "all-disabled"
            and lab.get("nvidia.com/mig.config.state") == "success"
        ):
            product = f"{product}-MIG-{mig_cfg[4:]}"
        major, minor = COMPUTE.get(gpu["family"], (0, 0))
        out.update(
            {
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpu["count"]),
                "nvidia.com/gpu.memory": str(gpu["memory"]),
                "nvidia.com/gpu.family": gpu["family"],
                "nvidia.com/gpu.compute.major": str(major),
                "nvidia.com/gpu.compute.minor": str(minor),
                "nvidia.com/gpu.replicas": "1",
                "nvidia.com/gpu.mode": "compute",
                "nvidia.com/gpu.sharing-strategy": "none",
                "nvidia.com/mig.strategy": strategy,
                "nvidia.com/mig.capable": "true" if gpu["mig_capable"] else "false",
            }
        )
        if driver_version:
            out.update(driver_version_labels(driver_version))
    if gpu["mig_capable"] and spec_enabled(spec, "migManager") and "nvidia.com/mig.config" not in lab:
        out["nvidia.com/mig.config"] = ((spec.get("migManager") or {}).get("config") or {}).get(
            "default", "all-disabled"
        ) or "all-disabled"
    return {k: v for k, v in out.items() if lab.get(k) != v}


# ---------------------------------------------------------------------------------------------- capacity


def desired_gpu_resources(node: dict, ops: dict, spec: dict) -> dict:
    """Extended resources {name: (capacity, allocatable)} for a GPU node.

    ops maps operand key → True (pod on the node Ready), False (pod present, not Ready) or None (no pod)."""
    gpu = gpu_info(node)
    f = faults(node)
    lab = labels(node)
    strategy = (spec.get("mig") or {}).get("strategy", "single")
    layout = {"nvidia.com/gpu": gpu["count"]}
    if gpu["mig_capable"] and spec_enabled(spec, "migManager"):
        applied = annotations(node).get(ANN_MIG_APPLIED)
        if applied is not None:
            layout = mig_layout(applied, gpu, strategy) or layout
    driver_external = (not spec_enabled(spec, "driver")) or lab.get(DEPLOY + "driver") in ("false", "pre-installed")
    driver_ok = (driver_external or ops.get("driver") is True) and not (f & set(DRIVER_FAULTS))
    toolkit_ok = (not spec_enabled(spec, "toolkit") or ops.get("toolkit") is True) and "toolkit-no-runtime" not in f
    plugin_ok = ops.get("device-plugin") is True and "device-plugin-not-advertising" not in f
    out = {}
    for res, n in layout.items():
        if not (driver_ok and toolkit_ok and plugin_ok and spec_enabled(spec, "devicePlugin")):
            out[res] = (0, 0)
            continue
        alloc = n
        if "xid79" in f and n > 0:
            alloc = n - 1 if res == "nvidia.com/gpu" or len(layout) == 1 else n
        out[res] = (n, alloc)
    return out


def resource_patch(node: dict, want: dict) -> dict | None:
    """A status patch bringing capacity/allocatable to `want`; MIG resources not wanted are removed."""
    st = node.get("status") or {}
    cap, alloc = st.get("capacity") or {}, st.get("allocatable") or {}
    pc, pa = {}, {}
    for res, (c, a) in want.items():
        if cap.get(res) != str(c):
            pc[res] = str(c)
        if alloc.get(res) != str(a):
            pa[res] = str(a)
    for res in set(cap) | set(alloc):
        if res.startswith("nvidia.com/mig-") and res not in want:
            if res in cap:
                pc[res] = None
            if res in alloc:
                pa[res] = None
    if not pc and not pa:
        return None
    body: dict = {}
    if pc:
        body["capacity"] = pc
    if pa:
        body["allocatable"] = pa
    return {"status": body}


# ---------------------------------------------------------------------------------------------- status


def condition_set(state: str, reason: str, message: str, now: str, old: list | None) -> list:
    ready = state == "ready"
    new = [
        {"type": "Ready", "status": "True" if ready else "False", "reason": reason, "message": message},
        {
            "type": "Error",
            "status": "False" if ready else "True",
            "reason": "Ready" if ready else reason,
            "message": "" if ready else message,
        },
    ]
    oldmap = {c.get("type"): c for c in old or []}
    for c in new:
        o = oldmap.get(c["type"])
        c["lastTransitionTime"] = (
            o["lastTransitionTime"] if o and o.get("status") == c["status"] and o.get("lastTransitionTime") else now
        )
    return new


def policy_state(gpu_nodes: int, ds_status: dict, extra_error: str | None = None) -> tuple[str, str, str]:
    """(state, reason, message) from the operand DaemonSets' status: {ds_name: (desired, ready, updated)}."""
    if extra_error:
        return "notReady", "ReconcileFailed", extra_error
    if gpu_nodes == 0:
        return (
            "notReady",
            "NoGPUNodes",
            "no GPU node found: no node carries feature.node.kubernetes.io/pci-10de.present=true",
        )
    driver_bad = [n for n, (d, r, _u) in ds_status.items() if "driver" in n and r < d]
    if driver_bad:
        return "notReady", "DriverNotReady", f"driver daemonset(s) not ready: {', '.join(sorted(driver_bad))}"
    bad = [n for n, (d, r, _u) in ds_status.items() if r < d]
    if bad:
        return "notReady", "OperandNotReady", f"ClusterPolicy is not ready, states not ready: {', '.join(sorted(bad))}"
    return "ready", "Reconciled", "ClusterPolicy is ready as all resources have been successfully reconciled"


# ---------------------------------------------------------------------------------------------- upgrades


def short_hash(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def chart_version(cp: dict) -> tuple:
    """(26, 7, 0) from the ClusterPolicy's helm.sh/chart label; () when it has none."""
    chart = labels(cp).get("helm.sh/chart", "")
    m = re.search(r"-v(\d+)\.(\d+)\.(\d+)$", chart)
    return tuple(int(x) for x in m.groups()) if m else ()


def mid_upgrade(nodes: list[dict]) -> list[str]:
    """The names of the nodes whose driver upgrade is queued or under way (upgrade-required up to
    uncordon-required), the skip-labelled ones left out."""
    return sorted(
        name(n)
        for n in nodes
        if labels(n).get(UPGRADE_STATE) in UPGRADE_STATES[:8] and labels(n).get(UPGRADE_SKIP) != "true"
    )


def upgrade_aware_state(cp: dict, state: tuple[str, str, str], nodes: list[dict]) -> tuple[str, str, str]:
    """From 26.7.0 the ClusterPolicy stays notReady while any node is mid-upgrade (no early Ready); older releases
    report the operands' state alone, which can be ready while nodes still upgrade."""
    upgrading = mid_upgrade(nodes)
    if state[0] != "ready" or not upgrading or not restarts_in_place(cp):
        return state
    return (
        "notReady",
        "DriverUpgradeInProgress",
        f"driver upgrade in progress on {len(upgrading)} node(s): {', '.join(upgrading[:5])}",
    )


def restarts_in_place(cp: dict) -> bool:
    """Operator 26.7.0 and later: driver config digest, in-place driver restart, client-label evictions."""
    return chart_version(cp) >= (26, 7, 0)


def driver_digest(image: str, drv: dict) -> str:
    """The digest of what installs the driver: its image, env, type and the driver manager's image and env (never
    resources, probes, tolerations, labels or the upgrade policy)."""
    manager = drv.get("manager") or {}
    keys = ("env", "kernelModuleType", "usePrecompiled", "rdma", "licensingConfig", "repoConfig", "certConfig")
    return short_hash(
        {
            "image": image,
            "manager": [manager.get(k) for k in ("repository", "image", "version", "env")],
            **{k: drv.get(k) for k in keys},
        }
    )


def gpu_client(pod: dict) -> bool:
    """A pod of a DaemonSet that selects the nvidia.com/gpu.deploy.client label (node selector or affinity)."""
    if not any(r.get("kind") == "DaemonSet" for r in pod["metadata"].get("ownerReferences") or []):
        return False
    spec = pod.get("spec") or {}
    if CLIENT_LABEL in (spec.get("nodeSelector") or {}):
        return True
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or []
    return any(e.get("key") == CLIENT_LABEL for t in terms for e in t.get("matchExpressions") or [])
