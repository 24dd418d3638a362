# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Specification of the baseline checks (plugins/module_utils/_workflows/baseline/).

Every check has a case built to trip it and a case built to pass it, and every host check that reads a host fact a
case where that fact is unknown (a warn naming the source, never a pass or a fail). Host cases are the fake host
trees in tests/sim/hosts/ read by the real gpu_host_facts reader, some copied to a temporary directory and edited
to trip one check; NVML facts are written the way nvidia_gpu_facts reports them. Cluster cases are
gpu_preflight_info results. test_every_check_has_both_cases and
test_every_host_check_that_reads_a_host_fact_has_an_unknown_case keep the tables complete.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts import facts as hf
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._operator.node_judgement import judge_nvml
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.dra_checks import RESOURCE_API
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.drift import drift
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.evaluate import (
    evaluate_cluster,
    evaluate_host,
    summarise,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.model import (
    SEVERITIES,
    BaselineError,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.registry import (
    REGISTRY,
    catalogue,
    options,
)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._workflows.baseline.report import (
    markdown,
    report,
    should_fail,
)

ROOT = Path(__file__).resolve().parents[5]
HOSTS = ROOT / "tests" / "sim" / "hosts"
SNAPSHOT = Path(__file__).parent / "snapshots" / "baseline_report.md"


def tree(tmp_path, base, write=None, remove=()):
    """gpu_host facts of a copy of tests/sim/hosts/<base> with files written or removed."""
    dst = tmp_path / base
    if not dst.exists():
        shutil.copytree(HOSTS / base, dst, symlinks=True)
    for rel in remove:
        p = dst / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    for rel, content in (write or {}).items():
        p = dst / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return hf.collect(str(dst))


def facts(base):
    return hf.collect(str(HOSTS / base))


def nvml(arch="ampere", count=1, driver="550.127.05", health="ok", fabric=None, reason=None, name="NVIDIA A100"):
    """nvidia_gpu facts as nvidia_gpu_facts returns them (only the keys the checks read)."""
    if reason:
        return {"available": False, "reason": reason, "hint": "hint for %s" % reason, "gpus": []}
    gpus = [
        {
            "index": i,
            "name": name,
            "architecture": arch,
            "fabric": {"state": fabric} if fabric else None,
            "health": {"status": health, "reasons": ["row_remap_failure"] if health == "critical" else []},
        }
        for i in range(count)
    ]
    return {
        "available": True,
        "driver_version": driver,
        "nvml_version": "12.%s" % driver,
        "gpu_count": count,
        "health": health,
        "gpus": gpus,
    }


def host_ctx(gpu_host, nvidia_gpu=None):
    return {"gpu_host": gpu_host, "nvidia_gpu": nvidia_gpu or nvml(reason="library_not_found")}


OM = {"driver_policy": "operator-managed"}
PRE = {"driver_policy": "preinstalled"}
NRI = {"driver_policy": "operator-managed", "nri_plugin": True}
GC = {"driver_policy": "preinstalled", "operator_mode": "gpucluster"}
PRECOMPILED = {"driver_policy": "operator-managed", "use_precompiled": True, "driver_version": "580.105.08"}
DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"
DPKG_2_1 = "Package: containerd.io\nStatus: install ok installed\nVersion: 2.1.5-1\n"
NRI_OFF = 'version = 2\n[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n'  # as containerd 1.7 ships it
NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Sep 24 23:00:00 UTC 2024\n"
OS_2004 = 'ID=ubuntu\nVERSION_ID="20.04"\nPRETTY_NAME="Ubuntu 20.04.6 LTS"\n'
FM_WANTS = "etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service"
SECURE_BOOT = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
NFD_GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"
K3S_ENV = {
    "CONTAINERD_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
    "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock",
}

CONTAINERD_CONFIG = "etc/containerd/config.toml"
CDI_OFF = (
    (HOSTS / "ubuntu2204-kubeadm-containerd" / CONTAINERD_CONFIG)
    .read_text()
    .replace("enable_cdi = true", "enable_cdi = false")
)

# check id -> (failing case, passing case); a case takes tmp_path and returns (host context, options).
HOST_CASES = {
    "kernel.headers": (
        lambda t: (host_ctx(facts("broken-nouveau-no-headers")), OM),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root")), OM),
    ),
    "nouveau.loaded": (
        lambda t: (host_ctx(facts("broken-nouveau-no-headers")), OM),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
    ),
    "nouveau.blacklisted": (
        lambda t: (host_ctx(facts("microk8s")), OM),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
    ),
    "secure_boot.driver": (
        lambda t: (host_ctx(facts("rhel9-secureboot")), OM),
        lambda t: (host_ctx(facts("rhel9-secureboot"), nvml(arch="turing", driver="535.216.01")), PRE),
    ),
    "driver.preinstalled_conflict": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root")), OM),
    ),
    # runtime_checks.py (more in test_baseline_runtime.py)
    "runtime.containerd_config_versions": (
        lambda t: (host_ctx(facts("ubuntu2404-containerd2-mixed-dropin")), OM),
        lambda t: (host_ctx(facts("ubuntu2204-containerd17-nri")), OM),
    ),
    "runtime.nri_supported": (
        lambda t: (host_ctx(facts("ubuntu2204-containerd17-nri")), NRI),
        lambda t: (host_ctx(tree(t, "ubuntu2404-containerd2-mixed-dropin", {"var/lib/dpkg/status": DPKG_2_1})), NRI),
    ),
    "secure_boot.module_signed": (
        lambda t: (host_ctx(facts("ubuntu2204-secureboot-unsigned")), OM),
        lambda t: (host_ctx(facts("rhel9-secureboot")), OM),
    ),
    "driver.precompiled_image": (
        lambda t: (host_ctx(facts("ubuntu2404-containerd2-mixed-dropin")), dict(PRECOMPILED, precompiled_tags=[])),
        lambda t: (
            host_ctx(facts("ubuntu2404-containerd2-mixed-dropin")),
            dict(PRECOMPILED, precompiled_tags=["580-6.8.0-51-generic-ubuntu24.04"]),
        ),
    ),
    "driver.preinstalled_present": (
        lambda t: (host_ctx(facts("broken-nouveau-no-headers")), PRE),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), PRE),
    ),
    "driver.host_supported": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), PRE),
        lambda t: (
            host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"proc/driver/nvidia/version": NVRM % "595.91.07"})),
            PRE,
        ),
    ),
    "runtime.nri_enabled": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"etc/containerd/config.toml": NRI_OFF})), NRI),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root")), NRI),
    ),
    "driver.library_mismatch": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(reason="driver_library_mismatch")), PRE),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), PRE),
    ),
    "nvml.available": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(reason="no_permission")), PRE),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), PRE),
    ),
    "os.supported": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"etc/os-release": OS_2004})), OM),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
    ),
    "runtime.containerd_paths": (
        lambda t: (host_ctx(facts("k3s")), OM),
        lambda t: (host_ctx(facts("k3s")), dict(OM, toolkit_env=K3S_ENV)),
    ),
    "kernel_module.required": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(arch="blackwell", driver="550.127.05")), PRE),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root"), nvml(arch="blackwell", driver="570.124.06")), OM),
    ),
    "kernel_module.recommended": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(arch="hopper")), PRE),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root"), nvml(arch="hopper", driver="570.124.06")), PRE),
    ),
    "fabric_manager.nvswitch": (
        lambda t: (host_ctx(facts("k3s"), nvml(count=8)), PRE),
        lambda t: (host_ctx(tree(t, "k3s", {FM_WANTS: ""}), nvml(count=8, fabric="completed")), PRE),
    ),
    "unattended_upgrades.kernel": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
        lambda t: (host_ctx(facts("ubuntu2404-operator-driver-root")), OM),
    ),
    "devices.char_links": (
        lambda t: (host_ctx(facts("rke2")), OM),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
    ),
    "gpu.health": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(health="critical", count=2)), PRE),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(health="ok")), PRE),
    ),
    "cuda.driver_minimum": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), dict(PRE, cuda_version="13.0")),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml()), dict(PRE, cuda_version="12.4")),
    ),
    "host_facts.problems": (
        lambda t: (host_ctx(facts("broken-nouveau-no-headers")), OM),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), OM),
    ),
    "dra.driver_version": (
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), GC),
        lambda t: (
            host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"proc/driver/nvidia/version": NVRM % "580.173.02"})),
            GC,
        ),
    ),
    "dra.cdi_enabled": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {CONTAINERD_CONFIG: CDI_OFF})), GC),
        lambda t: (host_ctx(facts("ubuntu2204-kubeadm-containerd")), GC),
    ),
}


#: NUL bytes where text should be: gpu_host_facts reports the file malformed and the facts it feeds unknown.
GARBLED = b"\x00\x00"
DRIVER_GARBLED = {"proc/driver/nvidia/version": GARBLED}

# check id -> (a case whose host fact could not be read, the source the warn must name); the host checks that read
# no gpu_host fact (NVML's and the problems list's) have none.
UNKNOWN_CASES = {
    "kernel.headers": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"proc/sys/kernel/osrelease": GARBLED})), OM),
        "/proc/sys/kernel/osrelease (malformed)",
    ),
    "nouveau.loaded": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", remove=["sys"])), OM),
        "/sys (missing)",
    ),
    "nouveau.blacklisted": (
        lambda t: (host_ctx(tree(t, "microk8s", {"etc/modprobe.d/local.conf": GARBLED})), OM),
        "/etc/modprobe.d/local.conf (malformed)",
    ),
    "secure_boot.driver": (
        lambda t: (host_ctx(tree(t, "rhel9-secureboot", {SECURE_BOOT: b"\x06\x00\x00\x00\x01\x00"})), OM),
        "/%s (malformed)" % SECURE_BOOT,
    ),
    "driver.preinstalled_conflict": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED)), OM),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "driver.preinstalled_present": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED)), PRE),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "driver.host_supported": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED)), PRE),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "driver.library_mismatch": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED), nvml()), PRE),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "runtime.nri_enabled": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"etc/containerd/config.toml": GARBLED})), NRI),
        "/etc/containerd/config.toml (malformed)",
    ),
    "runtime.containerd_config_versions": (
        lambda t: (host_ctx(tree(t, "ubuntu2404-containerd2-mixed-dropin", {DROP_IN: GARBLED})), OM),
        "/etc/containerd/config.toml",
    ),
    "runtime.nri_supported": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-containerd17-nri", {"usr/bin/containerd": GARBLED})), NRI),
        "/usr/bin/containerd (malformed)",
    ),
    "secure_boot.module_signed": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-secureboot-unsigned", {SECURE_BOOT: GARBLED})), OM),
        "/%s (malformed)" % SECURE_BOOT,
    ),
    "driver.precompiled_image": (
        lambda t: (
            host_ctx(tree(t, "ubuntu2204-containerd17-nri", {"proc/sys/kernel/osrelease": GARBLED})),
            PRECOMPILED,
        ),
        "/proc/sys/kernel/osrelease (malformed)",
    ),
    "os.supported": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"etc/os-release": GARBLED})), OM),
        "/etc/os-release (malformed)",
    ),
    "runtime.containerd_paths": (
        lambda t: (host_ctx(tree(t, "rke2", {"etc/rancher/rke2/config.yaml": GARBLED})), OM),
        "/etc/rancher/rke2/config.yaml (malformed)",
    ),
    "kernel_module.required": (
        lambda t: (
            host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED), nvml(arch="blackwell")),
            PRE,
        ),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "kernel_module.recommended": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED), nvml(arch="hopper")), PRE),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "fabric_manager.nvswitch": (
        lambda t: (host_ctx(tree(t, "k3s", remove=["sys"]), nvml(count=8)), PRE),
        "/sys (missing)",
    ),
    "unattended_upgrades.kernel": (
        lambda t: (
            host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {"etc/apt/apt.conf.d/20auto-upgrades": GARBLED})),
            OM,
        ),
        "/etc/apt/apt.conf.d/20auto-upgrades (malformed)",
    ),
    "devices.char_links": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", remove=["dev"])), OM),
        "/dev (missing)",
    ),
    "cuda.driver_minimum": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED)), dict(PRE, cuda_version="12.4")),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "dra.driver_version": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", DRIVER_GARBLED)), GC),
        "/proc/driver/nvidia/version (malformed)",
    ),
    "dra.cdi_enabled": (
        lambda t: (host_ctx(tree(t, "ubuntu2204-kubeadm-containerd", {CONTAINERD_CONFIG: GARBLED})), GC),
        "/etc/containerd/config.toml (malformed)",
    ),
}
READ_NO_HOST_FACT = {"nvml.available", "gpu.health", "host_facts.problems"}


def node(name, gpu=True, labels=None, taints=(), unschedulable=False, upgrade_state=None, runtime="containerd://2.1.4"):
    all_labels = {"kubernetes.io/hostname": name}
    if gpu:
        all_labels[NFD_GPU_LABEL] = "true"
    all_labels.update(labels or {})
    return {
        "name": name,
        "gpu": gpu,
        "all_labels": all_labels,
        "taints": list(taints),
        "unschedulable": unschedulable,
        "upgrade_state": upgrade_state,
        "container_runtime_version": runtime,
    }


def cluster(nodes=None, **over):
    nodes = nodes or [node("h100-0"), node("h100-1"), node("cpu-0", gpu=False)]
    out = {
        "kubernetes_version": {"git_version": "v1.36.3"},
        "nodes": {n["name"]: n for n in nodes},
        "nfd": {"daemonsets": [], "labelled_nodes": 2},
        "crds": {"servicemonitors.monitoring.coreos.com": True},
        "runtime_class": {"name": "nvidia", "exists": False, "handler": None},
        "namespace": {"name": "gpu-operator", "exists": False, "labels": {}},
        "cluster_policy": {"exists": False},
        "access": [{"identity": "automation", "checked": 3, "missing": []}],
    }
    out.update(over)
    return out


def gpu_hosts(node_names=("h100-0", "h100-1"), pool="h100", gpu_host=None, **per_host):
    gh = gpu_host or facts("ubuntu2204-kubeadm-containerd")
    return {
        "host-%d" % i: dict(
            {
                "node_name": n,
                "pool": pool,
                "gpu_host": gh,
                "nvidia_gpu": nvml(arch="hopper", count=8, name="NVIDIA H100 80GB HBM3"),
                "gpu_node_labels": {NFD_GPU_LABEL: "true"},
                "gpu_node_taints": [],
            },
            **per_host,
        )
        for i, n in enumerate(node_names)
    }


TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

# check id -> (failing case, passing case); a case takes tmp_path and returns (cluster, hosts, options).
CLUSTER_CASES = {
    "hosts.gathered": (
        lambda t: (cluster(), dict(gpu_hosts(), **{"host-7": {"node_name": "h100-1", "pool": "h100"}}), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "k8s.version": (
        lambda t: (cluster(kubernetes_version={"git_version": "v1.31.4"}), gpu_hosts(), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "driver.target_supported": (
        lambda t: (cluster(), gpu_hosts(), dict(OM, driver_version="550.127.08")),
        lambda t: (cluster(), gpu_hosts(), dict(OM, driver_version="580.173.02")),
    ),
    "nodes.mapped": (
        lambda t: (cluster(), gpu_hosts(("h100-0", "h100-9")), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "nfd.existing": (
        lambda t: (cluster(nfd={"daemonsets": [{"namespace": "nfd", "name": "nfd-worker"}]}), gpu_hosts(), OM),
        lambda t: (
            cluster(nfd={"daemonsets": [{"namespace": "nfd", "name": "nfd-worker"}]}),
            gpu_hosts(),
            dict(OM, nfd_enabled=False),
        ),
    ),
    "servicemonitor.crd": (
        lambda t: (
            cluster(crds={"servicemonitors.monitoring.coreos.com": False}),
            gpu_hosts(),
            dict(OM, operator_version="v25.10.1", service_monitor_enabled=True),
        ),
        lambda t: (cluster(), gpu_hosts(), dict(OM, operator_version="v25.10.1", service_monitor_enabled=True)),
    ),
    "servicemonitor.scrape": (
        lambda t: (cluster(crds={"servicemonitors.monitoring.coreos.com": False}), gpu_hosts(), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "runtimeclass.nvidia": (
        lambda t: (cluster(runtime_class={"name": "nvidia", "exists": True, "handler": "runc"}), gpu_hosts(), OM),
        lambda t: (cluster(runtime_class={"name": "nvidia", "exists": True, "handler": "nvidia"}), gpu_hosts(), OM),
    ),
    "nodes.cordoned": (
        lambda t: (cluster([node("h100-0", unschedulable=True), node("h100-1")]), gpu_hosts(), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "nodes.upgrade_failed": (
        lambda t: (cluster([node("h100-0"), node("h100-1", upgrade_state="upgrade-failed")]), gpu_hosts(), OM),
        lambda t: (cluster([node("h100-0", upgrade_state="upgrade-done"), node("h100-1")]), gpu_hosts(), OM),
    ),
    "namespace.podsecurity": (
        lambda t: (
            cluster(namespace={"exists": True, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}),
            gpu_hosts(),
            OM,
        ),
        lambda t: (
            cluster(namespace={"exists": True, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}),
            gpu_hosts(),
            OM,
        ),
    ),
    "rbac.permissions": (
        lambda t: (
            cluster(
                access=[{"identity": "automation", "checked": 3, "missing": [{"verb": "patch", "resource": "nodes"}]}]
            ),
            gpu_hosts(),
            OM,
        ),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "nodes.gpu_separation": (
        lambda t: (
            cluster([node("h100-0"), node("h100-1"), node("cpu-0", gpu=False, taints=[TAINT])]),
            gpu_hosts(gpu_node_taints=[TAINT]),
            OM,
        ),
        lambda t: (
            cluster([node("h100-0", taints=[TAINT]), node("h100-1", taints=[TAINT]), node("cpu-0", gpu=False)]),
            gpu_hosts(gpu_node_taints=[TAINT]),
            OM,
        ),
    ),
    "dcgm_exporter.enabled": (
        lambda t: (cluster(), gpu_hosts(), dict(OM, dcgm_exporter_enabled=False)),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "runtime.version": (
        lambda t: (cluster([node("h100-0", runtime="containerd://1.7.27"), node("h100-1")]), gpu_hosts(), OM),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "runtime.nri_version": (
        lambda t: (cluster([node("h100-0", runtime="containerd://1.7.27"), node("h100-1")]), gpu_hosts(), NRI),
        lambda t: (cluster(), gpu_hosts(), NRI),
    ),
    "fleet.drift": (
        lambda t: (
            cluster(),
            dict(
                gpu_hosts(("h100-0",)),
                **{
                    "host-9": dict(
                        gpu_hosts(("h100-1",))["host-0"],
                        gpu_host=tree(
                            t, "ubuntu2204-kubeadm-containerd", {"proc/sys/kernel/osrelease": "6.8.0-40-generic\n"}
                        ),
                    )
                },
            ),
            OM,
        ),
        lambda t: (cluster(), gpu_hosts(), OM),
    ),
    "dra.kubernetes_version": (
        lambda t: (cluster(kubernetes_version={"git_version": "v1.34.1"}), gpu_hosts(), GC),
        lambda t: (cluster(kubernetes_version={"git_version": "v1.34.2"}), gpu_hosts(), GC),
    ),
    "dra.api_served": (
        lambda t: (cluster(crds={RESOURCE_API: False}), gpu_hosts(), GC),
        lambda t: (cluster(crds={RESOURCE_API: True}), gpu_hosts(), GC),
    ),
}


def by_id(results, check_id):
    return next(r for r in results if r["id"] == check_id)


def test_every_check_has_both_cases():
    host_ids = {c.id for c in REGISTRY.values() if c.scope == "host"}
    cluster_ids = {c.id for c in REGISTRY.values() if c.scope == "cluster"}
    assert set(HOST_CASES) == host_ids
    assert set(CLUSTER_CASES) == cluster_ids


@pytest.mark.parametrize("check_id", sorted(HOST_CASES))
def test_host_check_fails_on_the_host_built_to_trip_it(check_id, tmp_path):
    ctx, raw = HOST_CASES[check_id][0](tmp_path)
    r = by_id(evaluate_host(ctx, options(raw))["results"], check_id)
    assert r["status"] == "fail", r
    assert r["evidence"] and r["fix"]


@pytest.mark.parametrize("check_id", sorted(HOST_CASES))
def test_host_check_passes_on_the_host_built_to_pass_it(check_id, tmp_path):
    ctx, raw = HOST_CASES[check_id][1](tmp_path)
    r = by_id(evaluate_host(ctx, options(raw))["results"], check_id)
    assert r["status"] == "pass", r
    assert r["fix"] is None


def test_every_host_check_that_reads_a_host_fact_has_an_unknown_case():
    host_ids = {c.id for c in REGISTRY.values() if c.scope == "host"}
    assert set(UNKNOWN_CASES) == host_ids - READ_NO_HOST_FACT


@pytest.mark.parametrize("check_id", sorted(UNKNOWN_CASES))
def test_an_unknown_host_fact_is_a_warn_naming_what_could_not_be_read(check_id, tmp_path):
    make, source = UNKNOWN_CASES[check_id]
    ctx, raw = make(tmp_path)
    r = by_id(evaluate_host(ctx, options(raw))["results"], check_id)
    assert (r["status"], r["severity"]) == ("fail", "warn"), r
    assert r["evidence"].startswith("unknown: ") and source in r["evidence"], r["evidence"]
    assert "gather the host facts again" in r["fix"]


def test_an_unknown_fact_is_at_most_a_warn_and_a_lower_severity_stays():
    gh = dict(facts("ubuntu2204-kubeadm-containerd"), nouveau={"loaded": None, "blacklisted_modprobe": True})
    r = by_id(evaluate_host(host_ctx(gh), options(OM))["results"], "nouveau.loaded")
    assert (r["status"], r["severity"]) == ("fail", "warn") and summarise([r])["verdict"] == "warn"
    info = evaluate_host(host_ctx(gh), options(dict(OM, severity={"nouveau.loaded": "info"})))
    assert by_id(info["results"], "nouveau.loaded")["severity"] == "info"


@pytest.mark.parametrize("check_id", sorted(CLUSTER_CASES))
def test_cluster_check_fails_on_the_cluster_built_to_trip_it(check_id, tmp_path):
    cl, hosts, raw = CLUSTER_CASES[check_id][0](tmp_path)
    r = by_id(evaluate_cluster(cl, hosts, options(raw))["results"], check_id)
    assert r["status"] == "fail", r
    assert r["evidence"] and r["fix"]


@pytest.mark.parametrize("check_id", sorted(CLUSTER_CASES))
def test_cluster_check_passes_on_the_cluster_built_to_pass_it(check_id, tmp_path):
    cl, hosts, raw = CLUSTER_CASES[check_id][1](tmp_path)
    r = by_id(evaluate_cluster(cl, hosts, options(raw))["results"], check_id)
    assert r["status"] == "pass", r


# -- details the tables do not pin -------------------------------------------------------------------------


def test_containerd_paths_fix_names_the_distributions_paths(tmp_path):
    r = by_id(evaluate_host(host_ctx(facts("k3s")), options(OM))["results"], "runtime.containerd_paths")
    assert "CONTAINERD_CONFIG=/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl" in r["fix"]
    assert "CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock" in r["fix"]


def test_a_missing_containerd_socket_fails(tmp_path):
    gh = tree(tmp_path, "ubuntu2204-kubeadm-containerd", remove=["run/containerd/containerd.sock"])
    r = by_id(evaluate_host(host_ctx(gh), options(OM))["results"], "runtime.containerd_paths")
    assert r["status"] == "fail" and "/run/containerd/containerd.sock is missing" in r["evidence"]


def test_kernel_module_auto_needs_a_driver_that_can_choose():
    ctx = host_ctx(facts("ubuntu2404-operator-driver-root"), nvml(arch="blackwell"))
    r = by_id(evaluate_host(ctx, options(dict(OM, driver_version="570.86.10")))["results"], "kernel_module.required")
    assert r["status"] == "fail" and "570.124.06" in r["evidence"]
    r = by_id(
        evaluate_host(ctx, options(dict(OM, kernel_module_type="proprietary")))["results"], "kernel_module.required"
    )
    assert r["status"] == "fail" and "kernelModuleType=open" in r["fix"]
    r = by_id(evaluate_host(ctx, options(dict(OM, operator_version="v24.9.2")))["results"], "kernel_module.required")
    assert r["status"] == "fail" and "24.9 has no driver.kernelModuleType" in r["evidence"]


def test_pre_gsp_gpus_require_the_proprietary_modules():
    ctx = host_ctx(facts("ubuntu2404-operator-driver-root"), nvml(arch="volta"))
    r = by_id(evaluate_host(ctx, options(PRE))["results"], "kernel_module.required")
    assert r["status"] == "fail" and "need the proprietary kernel modules; the host driver is open" in r["evidence"]


def test_fabric_registration_in_progress_fails_whatever_the_policy():
    ctx = host_ctx(facts("ubuntu2404-operator-driver-root"), nvml(arch="hopper", count=2, fabric="in_progress"))
    r = by_id(evaluate_host(ctx, options(OM))["results"], "fabric_manager.nvswitch")
    assert r["status"] == "fail" and "GPU 0 in_progress" in r["evidence"]


def test_a_runtimeclass_missing_after_install_fails():
    cl = cluster(cluster_policy={"exists": True, "dcgm_exporter_enabled": True})
    r = by_id(evaluate_cluster(cl, gpu_hosts(), options(OM))["results"], "runtimeclass.nvidia")
    assert r["status"] == "fail"


def test_dcgm_exporter_is_read_from_the_cluster_policy_once_installed():
    cl = cluster(cluster_policy={"exists": True, "dcgm_exporter_enabled": False})
    r = by_id(evaluate_cluster(cl, gpu_hosts(), options(OM))["results"], "dcgm_exporter.enabled")
    assert r["status"] == "fail" and "ClusterPolicy spec.dcgmExporter.enabled" in r["evidence"]


def test_separation_fails_on_a_gpu_node_without_the_declared_label():
    cl = cluster([node("h100-0"), node("h100-1", labels={"pool": "x"})])
    hosts = gpu_hosts(gpu_node_labels={"pool": "x"})
    r = by_id(evaluate_cluster(cl, hosts, options(OM))["results"], "nodes.gpu_separation")
    assert r["status"] == "fail" and r["evidence"] == "GPU node h100-0 lacks label pool=x"
    assert r["subjects"] == ["host-0"]


def test_separation_without_declarations_is_not_applicable():
    r = by_id(
        evaluate_cluster(cluster(), gpu_hosts(gpu_node_labels={}), options(OM))["results"], "nodes.gpu_separation"
    )
    assert r["status"] == "not_applicable"


def test_rbac_lists_each_missing_permission_with_its_identity():
    missing = [
        {"verb": "create", "resource": "customresourcedefinitions", "group": "apiextensions.k8s.io"},
        {"verb": "get", "resource": "pods", "subresource": "log", "namespace": "gpu-operator"},
    ]
    cl = cluster(
        access=[
            {"identity": "automation", "checked": 5, "missing": []},
            {"identity": "installer", "checked": 4, "missing": missing},
        ]
    )
    r = by_id(evaluate_cluster(cl, gpu_hosts(), options(OM))["results"], "rbac.permissions")
    assert r["evidence"] == (
        "2 of 9 permission(s) denied: installer: create customresourcedefinitions.apiextensions.k8s.io; "
        "installer: get pods/log in namespace gpu-operator"
    )


def test_drift_names_the_pool_dimension_and_hosts(tmp_path):
    cl, hosts, raw = CLUSTER_CASES["fleet.drift"][0](tmp_path)
    assert drift(hosts) == [
        {
            "pool": "h100",
            "dimension": "kernel",
            "values": {"5.15.0-124-generic": ["host-0"], "6.8.0-40-generic": ["host-9"]},
        }
    ]


# -- options: skip, severity, user checks -------------------------------------------------------------------


def test_unknown_ids_in_the_skip_list_are_an_error_naming_them():
    with pytest.raises(BaselineError, match=r"gpu_baseline_skip names unknown check id\(s\): kernel\.header, nope"):
        options({"skip": ["nope", "kernel.header", "nouveau.loaded"]})


def test_unknown_ids_and_bad_values_in_severity_are_errors():
    with pytest.raises(BaselineError, match=r"gpu_baseline_severity names unknown check id\(s\): nouveau"):
        options({"severity": {"nouveau": "warn"}})
    with pytest.raises(BaselineError, match="nouveau.loaded=fatal; a severity is fail, warn or info"):
        options({"severity": {"nouveau.loaded": "fatal"}})


def test_bad_policy_release_and_user_checks_are_errors():
    with pytest.raises(BaselineError, match="driver_policy is 'host'"):
        options({"driver_policy": "host"})
    with pytest.raises(BaselineError, match="gpu_baseline_operator_version: .*'v23.9.0'"):
        options({"operator_version": "v23.9.0"})
    with pytest.raises(BaselineError, match=r"user_checks\[0\] has no id"):
        options({"user_checks": [{"failed": True}]})
    with pytest.raises(BaselineError, match="id 'nouveau.loaded' is already taken"):
        options({"user_checks": [{"id": "nouveau.loaded", "failed": True}]})


def test_a_skipped_check_does_not_run_and_does_not_fail_the_host():
    ctx = host_ctx(facts("broken-nouveau-no-headers"))
    res = evaluate_host(ctx, options({"skip": ["nouveau.loaded", "kernel.headers", "host_facts.problems"]}))
    assert by_id(res["results"], "nouveau.loaded")["status"] == "skipped"
    assert res["verdict"] == "warn"


def test_a_severity_override_changes_the_verdict():
    ctx = host_ctx(facts("ubuntu2404-operator-driver-root"))
    assert evaluate_host(ctx, options(OM))["verdict"] == "warn"
    res = evaluate_host(ctx, options({"severity": {"devices.char_links": "fail"}}))
    assert res["verdict"] == "fail" and res["findings"][0]["severity"] == "fail"
    # the tree's NVML stand-in links out of the root (to build/nvml): host_facts.problems warns about it too
    res = evaluate_host(ctx, options({"severity": {"devices.char_links": "info", "host_facts.problems": "info"}}))
    assert res["verdict"] == "pass" and len(res["findings"]) == 2


def test_user_checks_report_like_built_in_ones():
    checks = [
        {"id": "site.kernel_pinned", "failed": True, "evidence": "kernel 5.15 not pinned", "fix": "apt-mark hold"},
        {"id": "site.ok", "failed": "False", "severity": "warn", "fix": "n/a"},
    ]
    res = evaluate_host(host_ctx(facts("ubuntu2404-operator-driver-root")), options({"user_checks": checks}))
    assert by_id(res["results"], "site.kernel_pinned") == {
        "id": "site.kernel_pinned",
        "scope": "host",
        "severity": "fail",
        "title": "site.kernel_pinned",
        "status": "fail",
        "evidence": "kernel 5.15 not pinned",
        "fix": "apt-mark hold",
    }
    assert by_id(res["results"], "site.ok")["status"] == "pass"
    skipped = evaluate_host(
        host_ctx(facts("ubuntu2404-operator-driver-root")),
        options({"user_checks": checks, "skip": ["site.kernel_pinned"]}),
    )
    assert by_id(skipped["results"], "site.kernel_pinned")["status"] == "skipped"


# -- the report -------------------------------------------------------------------------------------------


def demo_like_report(tmp_path):
    """Three hosts in two pools: one clean, one without a node, one with nouveau loaded and no headers."""
    hosts = gpu_hosts(
        ("h100-0",),
        gpu_host=facts("ubuntu2404-operator-driver-root"),  # its kernel module is 570.124.06, so is its NVML
        nvidia_gpu=nvml(arch="hopper", count=8, driver="570.124.06", name="NVIDIA H100 80GB HBM3"),
    )
    hosts["a100-lost"] = dict(hosts["host-0"], node_name="a100-7", pool="a100")
    hosts["l40s-broken"] = dict(
        hosts["host-0"], node_name="h100-1", pool="l40s", gpu_host=facts("broken-nouveau-no-headers")
    )
    return report(hosts, cluster(), {"operator_version": "v26.7.0"})


def test_a_host_without_facts_gets_only_the_gathered_finding():
    hosts = dict(gpu_hosts(), ghost={"node_name": "h100-1", "pool": "h100"})
    rep = report(hosts, cluster(), {})
    assert [f["id"] for f in rep["hosts"]["ghost"]["findings"]] == ["hosts.gathered"]
    assert rep["hosts"]["ghost"]["verdict"] == "fail"


def test_a_cluster_finding_about_a_host_fails_that_host(tmp_path):
    rep = demo_like_report(tmp_path)
    lost = rep["hosts"]["a100-lost"]
    assert lost["verdict"] == "fail"
    assert [f["id"] for f in lost["findings"] if f["scope"] == "cluster"] == ["nodes.mapped"]
    assert rep["counts"] == {"pass": 0, "warn": 1, "fail": 2}
    assert rep["verdict"] == "fail"


def test_the_markdown_names_every_failing_host_with_its_fix(tmp_path):
    md = markdown(demo_like_report(tmp_path))
    for host in ("a100-lost", "l40s-broken"):
        assert "### %s (fail)" % host in md
    assert "Fix: Blacklist nouveau" in md
    assert "Fix: Set the node name variable" in md


def test_report_snapshot(tmp_path):
    md = markdown(demo_like_report(tmp_path))
    if os.environ.get("GPUOPS_UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(md)
    assert md == SNAPSHOT.read_text(), "regenerate with GPUOPS_UPDATE_SNAPSHOTS=1 after checking the diff"


def test_should_fail_follows_fail_on():
    assert should_fail({"verdict": "fail"}, "fail") and not should_fail({"verdict": "warn"}, "fail")
    assert should_fail({"verdict": "warn"}, "warn") and not should_fail({"verdict": "pass"}, "warn")
    assert not should_fail({"verdict": "fail"}, "never")


def test_the_catalogue_lists_every_check_once_with_a_valid_severity():
    cat = catalogue()
    assert len({c["id"] for c in cat}) == len(cat) == len(REGISTRY)
    assert all(c["severity"] in SEVERITIES and c["scope"] in ("host", "cluster") for c in cat)


def host_driver_result(version, operator="v26.7.0"):
    ctx = host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml(arch="hopper", driver=version, name="NVIDIA H200"))
    ctx["gpu_host"]["nvidia_driver"] = {"loaded": True, "version": version, "flavor": "open", "gcc": None}
    return by_id(evaluate_host(ctx, options(dict(PRE, operator_version=operator)))["results"], "driver.host_supported")


def test_a_preinstalled_r580_driver_on_h200_passes_on_operator_26_7_by_its_long_term_branch():
    r = host_driver_result("580.159.04")
    assert r["status"] == "pass", r
    assert r["evidence"] == (
        "host driver 580.159.04 is on R580 (long-term support), supported by operator 26.7 from 580.82.07"
    )


def test_a_driver_below_its_branch_minimum_warns_with_the_nearest_driver_on_its_branch():
    r = host_driver_result("580.65.06")
    assert (r["status"], r["severity"]) == ("fail", "warn")
    assert r["evidence"] == "host driver 580.65.06 is below 580.82.07, the minimum of R580 for operator 26.7"
    assert r["fix"] == (
        "Upgrade the host driver on R580 to 580.82.07 or later (for example 580.173.02, the operator's R580 driver)."
    )


def test_a_driver_on_an_unsupported_branch_is_told_the_nearest_supported_branch():
    r = host_driver_result("570.211.01")
    assert (r["status"], r["severity"]) == ("fail", "warn")
    assert "R570, a branch operator 26.7 does not support" in r["evidence"]
    assert "R580 (long-term support)" in r["evidence"] and "R610 (new feature)" in r["evidence"]
    assert (
        r["fix"]
        == "Move the host driver to R580, the nearest supported branch, at 580.82.07 or later (for example 580.173.02)."
    )


def test_the_target_driver_fix_proposes_the_nearest_container_on_its_branch():
    r = by_id(
        evaluate_cluster(cluster(), gpu_hosts(), options(dict(OM, driver_version="580.159.04")))["results"],
        "driver.target_supported",
    )
    assert r["status"] == "fail" and r["fix"].endswith("for example 580.173.02.")


def test_nri_plugin_mode_expects_no_runtimeclass_and_no_containerd_paths_in_toolkit_env(tmp_path):
    broken = cluster(runtime_class={"name": "nvidia", "exists": True, "handler": "runc"})
    r = by_id(evaluate_cluster(broken, gpu_hosts(), options(NRI))["results"], "runtimeclass.nvidia")
    assert r["status"] == "not_applicable" and "no RuntimeClass" in r["evidence"]
    ctx = host_ctx(facts("k3s"))
    assert by_id(evaluate_host(ctx, options(OM))["results"], "runtime.containerd_paths")["status"] == "fail"
    assert by_id(evaluate_host(ctx, options(NRI))["results"], "runtime.containerd_paths")["status"] == "pass"


def test_nri_checks_do_not_apply_without_the_nri_plugin(tmp_path):
    host = evaluate_host(host_ctx(facts("ubuntu2204-kubeadm-containerd")), options(OM))["results"]
    assert by_id(host, "runtime.nri_enabled")["status"] == "not_applicable"
    old = cluster([node("h100-0", runtime="containerd://1.7.27")])
    assert by_id(evaluate_cluster(old, gpu_hosts(), options(OM))["results"], "runtime.nri_version")["status"] == (
        "not_applicable"
    )


@pytest.mark.parametrize(
    "runtime, operator, passes",
    [
        ("containerd://1.7.30", "v26.3.0", True),
        ("containerd://1.7.29", "v26.7.0", False),
        ("containerd://2.0.6", "v26.7.0", False),
        ("containerd://2.2.1", "v26.3.3", True),
        ("cri-o://1.34.2", "v26.3.2", True),
        ("cri-o://1.34.2", "v26.3.1", False),
        ("cri-o://1.33.4", "v26.7.0", False),
        ("containerd://2.1.4", "v25.10.1", False),
    ],
)
def test_nri_plugin_mode_needs_containerd_1_7_30_or_2_1_and_cri_o_1_34_from_operator_26_3_2(runtime, operator, passes):
    nodes = cluster([node("h100-0", runtime=runtime), node("h100-1", runtime=runtime)])
    enabled = gpu_hosts(gpu_host=facts("ubuntu2404-operator-driver-root"))  # NRI on in its config
    r = by_id(
        evaluate_cluster(nodes, enabled, options(dict(NRI, operator_version=operator)))["results"],
        "runtime.nri_version",
    )
    assert r["status"] == ("pass" if passes else "fail"), r


def test_nri_version_names_what_each_runtime_needs():
    nodes = cluster([node("h100-0", runtime="containerd://2.0.6"), node("h100-1", runtime="cri-o://1.33.4")])
    r = by_id(evaluate_cluster(nodes, gpu_hosts(), options(NRI))["results"], "runtime.nri_version")
    assert r["evidence"] == (
        "NRI plugin mode needs CRI-O >= 1.34 with operator >= 26.3.2; containerd 1.7.30+ (below 1.8) or 2.1+: "
        "h100-0 containerd://2.0.6, h100-1 cri-o://1.33.4"
    )
    assert r["subjects"] == ["host-0", "host-1"]


def test_nri_left_to_the_runtime_default_is_a_warning_on_the_host_and_the_node_version_decides(tmp_path):
    r = by_id(
        evaluate_host(host_ctx(facts("ubuntu2204-kubeadm-containerd")), options(NRI))["results"], "runtime.nri_enabled"
    )
    assert (r["status"], r["severity"]) == ("fail", "warn"), r
    assert "leaves it to containerd's default (off in 1.7, on from 2.0)" in r["evidence"]
    assert r["fix"].startswith('Make it explicit: Add [plugins."io.containerd.nri.v1.nri"] with disable = false')
    unset = gpu_hosts()  # ubuntu2204-kubeadm-containerd: a version 2 config without the NRI table
    old = cluster([node("h100-0", runtime="containerd://1.7.30"), node("h100-1", runtime="containerd://2.1.4")])
    v = by_id(evaluate_cluster(old, unset, options(NRI))["results"], "runtime.nri_version")
    assert v["status"] == "fail" and v["subjects"] == ["host-0"]
    assert (
        "h100-0 containerd://1.7.30 (its default leaves NRI off; /etc/containerd/config.toml does not" in v["evidence"]
    )
    assert "enable NRI in the config named" in v["fix"]
    new = cluster([node("h100-0", runtime="containerd://2.2.0"), node("h100-1", runtime="containerd://2.1.4")])
    assert by_id(evaluate_cluster(new, unset, options(NRI))["results"], "runtime.nri_version")["status"] == "pass"


def test_nri_not_enabled_is_fixed_in_the_runtime_config_it_was_read_from(tmp_path):
    r = by_id(
        evaluate_host(
            host_ctx(tree(tmp_path, "ubuntu2204-kubeadm-containerd", {"etc/containerd/config.toml": NRI_OFF})),
            options(NRI),
        )["results"],
        "runtime.nri_enabled",
    )
    assert r["fix"].startswith(
        'Add [plugins."io.containerd.nri.v1.nri"] with disable = false to /etc/containerd/config.toml'
    )
    crio = evaluate_host(host_ctx(facts("rhel9-secureboot")), options(NRI))["results"]
    assert "Set enable_nri = true under [crio.nri] in /etc/crio/crio.conf" in by_id(crio, "runtime.nri_enabled")["fix"]
    k3s = evaluate_host(host_ctx(facts("k3s-operator-driver")), options(NRI))["results"]
    assert "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl" in by_id(k3s, "runtime.nri_enabled")["fix"]
    docker_only = {"gpu_host": {"container_runtime": {"name": "docker"}}, "nvidia_gpu": nvml()}
    assert (
        "needs containerd or CRI-O"
        in by_id(evaluate_host(docker_only, options(NRI))["results"], "runtime.nri_enabled")["evidence"]
    )


def test_a_kernel_module_that_disagrees_with_nvml_is_the_driver_library_mismatch_with_the_installed_driver_to_load():
    ctx = host_ctx(facts("ubuntu2204-kubeadm-containerd"), dict(nvml(driver="570.124.06")))
    r = by_id(evaluate_host(ctx, options(PRE))["results"], "driver.library_mismatch")
    assert r["status"] == "fail" and r["severity"] == "fail"
    assert r["evidence"] == (
        "Driver/library version mismatch: the loaded kernel module (/proc/driver/nvidia/version) is 550.127.05, "
        "NVML's driver is 570.124.06, the user-space library (NVML 12.570.124.06) is 570.124.06"
    )
    assert r["fix"].startswith("Load driver 570.124.06 kernel module: stop the GPU workloads on the host, then reboot")


def test_a_library_that_disagrees_with_the_module_nvml_reports_is_a_mismatch_too():
    ctx = host_ctx(facts("ubuntu2204-kubeadm-containerd"), dict(nvml(), nvml_version="12.550.144.03"))
    r = by_id(evaluate_host(ctx, options(PRE))["results"], "driver.library_mismatch")
    assert r["status"] == "fail" and "the user-space library (NVML 12.550.144.03) is 550.144.03" in r["evidence"]


def test_kernel_module_nvml_and_library_that_agree_pass_naming_the_version():
    ctx = host_ctx(facts("ubuntu2204-kubeadm-containerd"), nvml())
    r = by_id(evaluate_host(ctx, options(PRE))["results"], "driver.library_mismatch")
    assert r["status"] == "pass" and r["evidence"].endswith("agree on 550.127.05")


def test_nvml_unavailable_on_a_host_is_the_node_judgements_driver_finding_word_for_word():
    gpu = nvml(reason="library_not_found")
    ctx = host_ctx(facts("ubuntu2204-kubeadm-containerd"), dict(gpu, hint="Install the NVIDIA driver."))
    r = by_id(evaluate_host(ctx, options(PRE))["results"], "nvml.available")
    (judged,) = judge_nvml(ctx["nvidia_gpu"])
    assert judged["layer"] == "driver" and judged["code"] == "NVMLUnavailable"
    assert r["status"] == "fail" and (r["evidence"], r["fix"]) == (judged["message"], judged["fix"])
    assert (
        r["evidence"] == "NVML unavailable on the host: library_not_found" and r["fix"] == "Install the NVIDIA driver."
    )
