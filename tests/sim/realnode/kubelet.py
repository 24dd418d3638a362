"""The real node's kubelet: its identity (system:node:<name>, signed by the bed's CA), its configuration and its
labels at registration."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.sim import pki
from tests.sim.operator.logic import REAL_NODE as REAL_NODE_LABEL

#: Labels the kubelet registers with: what NFD would find (an NVIDIA PCI device), the operands this node runs
#: (only NVIDIA's device plugin; the driver, toolkit and the rest are set up on the host or not run), and the
#: mark that keeps the simulated operator from playing the parts the real node plays itself.
OFF_OPERANDS = (
    "driver",
    "container-toolkit",
    "gpu-feature-discovery",
    "dcgm",
    "dcgm-exporter",
    "operator-validator",
    "mig-manager",
    "node-status-exporter",
)


def registration_labels(extra: dict) -> dict:
    labels = {
        REAL_NODE_LABEL: "true",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
    }
    labels.update({f"nvidia.com/gpu.deploy.{op}": "false" for op in OFF_OPERANDS})
    labels.update(extra)
    return labels


def identity(pki_dir: Path, node: str, server: str, out: Path) -> Path:
    """A kubeconfig for the kubelet as ``system:node:<node>`` (the Node authorizer's subject)."""
    cert = pki.issue_client(pki_dir, f"kubelet-{node}", f"system:node:{node}", "system:nodes")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bed", "cluster": {"server": server, "certificate-authority": str(pki_dir / "ca.crt")}}],
        "users": [{"name": node, "user": {"client-certificate": cert["crt"], "client-key": cert["key"]}}],
        "contexts": [{"name": "bed", "context": {"cluster": "bed", "user": node}}],
        "current-context": "bed",
    }
    out.write_text(yaml.safe_dump(doc))
    out.chmod(0o600)
    return out


def config(ca: str, address: str, port: int, logs_dir: Path, cgroup_v1: bool) -> dict:
    """The KubeletConfiguration: cgroupfs, containerd's socket, x509 clients of the bed's CA (the API server's
    log and exec requests), no read-only or healthz port, eviction thresholds a build machine meets.

    ``failCgroupV1: false``: a kubelet >= 1.35 refuses to start on cgroup v1 unless told so."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": not cgroup_v1,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": ca},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "failSwapOn": False,
        "podLogsDir": str(logs_dir),
        "maxPods": 32,
        "serializeImagePulls": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "nodeStatusUpdateFrequency": "10s",
        "resolvConf": "/etc/resolv.conf",
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
    }


def argv(kubelet: str, node: str, node_ip: str, files: dict, labels: dict) -> list[str]:
    """The command line; ``files``: ``config``, ``kubeconfig`` and ``cert_dir`` (its serving certificate)."""
    return [
        kubelet,
        f"--config={files['config']}",
        f"--kubeconfig={files['kubeconfig']}",
        f"--hostname-override={node}",
        f"--node-ip={node_ip}",
        f"--cert-dir={files['cert_dir']}",
        "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "--v=1",
    ]


def write_config(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path
