"""Benchmark: gpu_host_facts + nvidia_gpu_facts vs ansible.builtin.setup (gather_subset: min), 50 local hosts.

Each inventory host is `connection: local` with its own host_root (cycling through tests/sim/hosts/*) and NVML
fixture (the fake libnvidia-ml.so.1). Each playbook runs --check, ANSIBLE_FORKS (default 10), best of --repeat runs.
The cost of a play is its wall time minus an empty play on the same hosts (process start, inventory, forking),
so the ratio compares the work of the tasks. Prints figures; never run from the test suite.

    .venv/bin/python bench/host_facts.py [--hosts 50] [--repeat 3]

``--in-process N`` times gpu_host_facts' ``collect()`` alone over every tree, best of N rounds, from the collection
root given (``--collections``, default build/collections; point it at another checkout's to compare).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TREES = sorted(p.name for p in (ROOT / "tests/sim/hosts").iterdir() if p.is_dir())
PROFILE = {
    "ubuntu2204-kubeadm-containerd": "l40s-4",
    "ubuntu2404-operator-driver-root": "h100-sxm-8",
    "rhel9-secureboot": "t4-1",
    "k3s": "a100-mig-8",
    "rke2": "degraded",
    "microk8s": "fields-unsupported",
    "broken-nouveau-no-headers": "driver-not-loaded",
    "gcp-secureboot-nouveau": "driver-not-loaded",
    "hgx-h100-docker-containerd": "h100-sxm-8",
    "k3s-operator-driver": "a100-mig-8",
    "rke2-vfio-passthrough": "driver-not-loaded",
    "ubuntu2404-container-root-links": "l40s-4",
    "ubuntu2404-containerd2-mixed-dropin": "l40s-4",
    "ubuntu2204-containerd17-nri": "l40s-4",
    "ubuntu2204-secureboot-unsigned": "l40s-4",
}

PLAYS = {
    "empty": [],
    "setup_min": [{"name": "setup", "ansible.builtin.setup": {"gather_subset": ["min"]}}],
    "gpuops_facts": [
        {"name": "host facts", "gpuops.gpu_operator.gpu_host_facts": {"host_root": "{{ host_root }}"}},
        {
            "name": "gpu facts",
            "gpuops.gpu_operator.nvidia_gpu_facts": {
                "host_root": "{{ host_root }}",
                "library_path": str(ROOT / "build/nvml/libnvidia-ml.so.1"),
            },
            "environment": {"GPUOPS_FAKE_NVML_FIXTURE": "{{ nvml_fixture }}"},
        },
    ],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--in-process", type=int, metavar="N", help="time collect() alone, best of N rounds")
    ap.add_argument("--collections", default=str(ROOT / "build/collections"))
    args = ap.parse_args()
    if args.in_process:
        return in_process(args.in_process, args.collections)
    subprocess.run(["make", "-s", "-C", str(ROOT / "tests/sim/nvml")], check=True)
    work = Path(tempfile.mkdtemp(prefix="gpuops-bench-"))
    coll = work / "collections/ansible_collections/gpuops"
    coll.mkdir(parents=True)
    (coll / "gpu_operator").symlink_to(ROOT)
    hosts = {}
    for i in range(args.hosts):
        tree = TREES[i % len(TREES)]
        hosts[f"gpu{i:03d}"] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "host_root": str(ROOT / "tests/sim/hosts" / tree),
            "nvml_fixture": str(ROOT / "tests/sim/nvml/profiles" / f"{PROFILE[tree]}.yml"),
        }
    inv = work / "inventory.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
        ANSIBLE_FORKS=os.environ.get("ANSIBLE_FORKS", "10"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal",
        ANSIBLE_LOCAL_TEMP=str(work / "t"),
    )
    env.pop("LD_LIBRARY_PATH", None)
    playbook = Path(sys.executable).parent / "ansible-playbook"
    best = {}
    for name, tasks in PLAYS.items():
        path = work / f"{name}.yml"
        path.write_text(yaml.safe_dump([{"name": name, "hosts": "all", "gather_facts": False, "tasks": tasks}]))
        times = []
        for _unused in range(args.repeat):
            t0 = time.monotonic()
            proc = subprocess.run(
                [str(playbook), "-i", str(inv), "--check", str(path)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            times.append(time.monotonic() - t0)
            if proc.returncode != 0:
                sys.exit(f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        best[name] = min(times)
    base = best["empty"]
    setup = best["setup_min"] - base
    ours = best["gpuops_facts"] - base
    n = args.hosts
    print(f"hosts={n} forks={env['ANSIBLE_FORKS']} repeat={args.repeat} (best wall seconds)")
    print(f"empty play            {base:7.2f} s")
    print(f"setup gather_subset=min {best['setup_min']:7.2f} s  -> {1000 * setup / n:6.1f} ms/host over empty")
    print(
        f"gpu_host_facts+nvidia_gpu_facts {best['gpuops_facts']:7.2f} s  -> {1000 * ours / n:6.1f} ms/host over empty"
    )
    print(f"ratio (both modules / setup min, per host) = {ours / setup:.2f}")


def in_process(rounds, collections):
    """Print the best time of ``rounds`` rounds of collect() over every tree, per tree."""
    sys.path.insert(0, collections)
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils._clients.host_facts.facts import collect

    roots = [str(ROOT / "tests/sim/hosts" / t) for t in TREES]
    best = None
    for _unused in range(rounds):
        t0 = time.perf_counter()
        for root in roots:
            collect(root)
        best = min(best or 1e9, time.perf_counter() - t0)
    print(f"collect() from {collections}: {len(roots)} trees, best of {rounds}: {1000 * best / len(roots):.2f} ms/tree")


if __name__ == "__main__":
    main()
