"""Benchmark: ansible-playbook on `scale-1000` - gpu_cluster_info and the gpu_validate role vs the raw LIST floor.

What users run is a playbook, not a function: this times whole `ansible-playbook` runs (process start-up, module
transfer, the module, serialising and registering its result) against the floor of bench/cluster_info.py (the raw
LISTs of nodes and pods, `kubectl get nodes,pods -A -o json`), measured in the same run and interleaved with them.

* gpu_cluster_info: one task with default options (`node_detail: problems`, the fleet shape: the full view and the
  summary of the nodes with a problem only, totals of every node), registered.
* gpu_cluster_info node_detail=all: the same task with every node in full (the shape before the option existed).
* gpu_validate role: the role with smoke pods off (`gpu_validate_smoke_test: false`, no wait, no monitoring
  query, `gpu_validate_fail_on: never`), reports written to a temporary directory; `gpu_validate_hosts` names every
  GPU node (hosts without an inventory entry or NVML facts: each row's host check fails, which `never` allows), so
  the role builds, reports and prints one row per node as on a fleet.
* empty play: one no-op task, the fixed cost of `ansible-playbook` (printed, not subtracted).

The registered size is `result | to_json | length` (bytes of JSON) of the registered module result, measured by a
separate run of the same play with one more task that writes it to a file (so the timed runs do not pay for it);
for the role it is the role's registered gpu_validate_report result (`__gpu_validate_report`: every row's verdict,
checks and evidence; the cluster's view stays in the module).

The bench seeds what an operator would have done on a healthy fleet, because the profile runs no operator: 7
operand pods per GPU node (bench/cluster_info.py's seeding), and the operator's labels on every GPU node
(`nvidia.com/gpu.present=true`, the product and count, the deploy labels of the required operands); then it
cordons --problem-nodes nodes (default 10, 1 %) so that the default `node_detail: problems` has something to
return.

    .venv/bin/python bench/playbook_scale.py [--state-dir DIR] [--problem-nodes 10] [--repeat 3]

Without --state-dir it starts `python -m tests.sim up --profile scale-1000` in a temporary directory and stops it
afterwards. Prints figures; never run from the test suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# _common (bench/_common.py) first: it makes the collection and tests.* importable
from _common import ROOT, new_client, parser, scale_testbed
from cluster_info import _create_all, floor, seed_operands

from tests.integration.helpers import collection_env

GPU_NODES = "feature.node.kubernetes.io/pci-10de.present=true"
OPERATOR_LABELS = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
}

CLUSTER_INFO_PLAY = """
- name: gpu_cluster_info
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the cluster's GPU view
      gpuops.gpu_operator.gpu_cluster_info:
        kubeconfig: "{{ bench_kubeconfig }}"
        node_detail: "{{ bench_node_detail | default(omit) }}"
      register: bench_result
    - name: Write the size of the registered result
      ansible.builtin.copy:
        content: "{{ bench_result | to_json | length }}"
        dest: "{{ bench_size_file }}"
        mode: "0600"
      when: bench_size_file is defined
"""

VALIDATE_PLAY = """
- name: gpu_validate
  hosts: localhost
  gather_facts: false
  roles:
    - role: gpuops.gpu_operator.gpu_validate
      vars:
        gpu_validate_kubeconfig: "{{ bench_kubeconfig }}"
        gpu_validate_hosts: "{{ bench_hosts }}"
        gpu_validate_smoke_test: false
        gpu_validate_wait_seconds: 0
        gpu_validate_monitoring: false
        gpu_validate_fail_on: never
        gpu_validate_report_dir: "{{ bench_report_dir }}"
  post_tasks:
    - name: Write the size of the registered verdict
      ansible.builtin.copy:
        content: "{{ __gpu_validate_report | to_json | length }}"
        dest: "{{ bench_size_file }}"
        mode: "0600"
      when: bench_size_file is defined
"""

EMPTY_PLAY = """
- name: empty
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Nothing
      ansible.builtin.meta: noop
"""


def label_fleet(admin_kubeconfig, problem_nodes):
    """The operator's labels on every GPU node; the first ``problem_nodes`` nodes by name cordoned, the rest not."""
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=admin_kubeconfig))
    names = sorted(
        n["metadata"]["name"] for n in new_client(admin_kubeconfig).list_core("nodes", label_selector=GPU_NODES)
    )
    cordoned = set(names[:problem_nodes])
    bodies = [
        (name, {"metadata": {"labels": OPERATOR_LABELS}, "spec": {"unschedulable": name in cordoned}}) for name in names
    ]
    t0 = time.perf_counter()
    _create_all(bodies, lambda item: api.patch_node(item[0], item[1]))
    print("labelled %d GPU nodes, %d cordoned, in %.1fs" % (len(names), len(cordoned), time.perf_counter() - t0))
    return names


def playbook(text, workdir, kubeconfig, size=False, **extra):
    """Run ``text`` as a playbook; returns (seconds, registered size in bytes or None)."""
    path = Path(workdir, "play.yml")
    path.write_text(text)
    size_file = Path(workdir, "size")
    size_file.unlink(missing_ok=True)
    extra = dict(extra, bench_kubeconfig=kubeconfig, bench_report_dir=str(Path(workdir, "reports")))
    if size:
        extra["bench_size_file"] = str(size_file)
    env = dict(collection_env(Path(workdir)), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-c", "local", str(path), "-e", json.dumps(extra)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900, check=False)
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (path, proc.stdout[-3000:], proc.stderr[-2000:]))
    return secs, int(size_file.read_text()) if size else None


def main():
    ap = parser(__doc__)
    ap.add_argument("--problem-nodes", type=int, default=10, help="GPU nodes cordoned (default 10)")
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()

    with scale_testbed(opts.state_dir) as state_dir, tempfile.TemporaryDirectory(prefix="gpuops-bench-") as work:
        state = json.loads(Path(state_dir, "state.json").read_text())
        admin, sa = state["kubeconfig"], state["sa_kubeconfig"]
        gpu_nodes = seed_operands(admin, 7)
        hosts = label_fleet(admin, opts.problem_nodes)
        time.sleep(2)
        print(
            "profile %s: %d GPU nodes, 7 operand pods per node, %d cordoned; best of %d interleaved runs; "
            "identity: least privilege; load average %s"
            % (state.get("profile"), gpu_nodes, opts.problem_nodes, opts.repeat, " ".join(map(str, os.getloadavg()))),
            flush=True,
        )
        runs = {
            "floor (raw LISTs, in-process)": lambda **kw: (timed_floor(sa), None),
            "empty play": lambda **kw: playbook(EMPTY_PLAY, work, sa, **kw),
            "gpu_cluster_info": lambda **kw: playbook(CLUSTER_INFO_PLAY, work, sa, **kw),
            "gpu_cluster_info node_detail=all": lambda **kw: playbook(
                CLUSTER_INFO_PLAY, work, sa, bench_node_detail="all", **kw
            ),
            "gpu_validate role (no smoke pods)": lambda **kw: playbook(
                VALIDATE_PLAY, work, sa, bench_hosts=hosts, **kw
            ),
        }
        best = {}
        for _unused in range(opts.repeat):
            for name, fn in runs.items():
                secs, _size = fn()
                best[name] = min(secs, best.get(name, secs))
        sizes = {name: fn(size=True)[1] for name, fn in runs.items() if name not in ("empty play",)}

        base = best["floor (raw LISTs, in-process)"]
        print("\n%-40s %9s %9s %14s" % ("run", "seconds", "vs floor", "registered B"))
        for name, secs in best.items():
            size = sizes.get(name)
            print("%-40s %9.3f %8.2fx %14s" % (name, secs, secs / base, "-" if size is None else size))
        print(
            "\nTargets at %d GPU nodes (ratios of the best runs; sizes: JSON bytes of the registered result):"
            % gpu_nodes
        )
        for name, target in (("gpu_cluster_info", 2.5), ("gpu_validate role (no smoke pods)", 4.0)):
            ratio = best[name] / base
            print(
                "  %-36s = %.2fx  (target <= %.1fx: %s)" % (name + " / floor", ratio, target, _label(ratio <= target))
            )
        for name in ("gpu_cluster_info", "gpu_cluster_info node_detail=all"):
            print(
                "  %-36s = %d bytes  (target <= 200 KB: %s)"
                % (name + " registered", sizes[name], _label(sizes[name] <= 200 * 1024))
            )


def timed_floor(kubeconfig):
    t0 = time.perf_counter()
    floor(kubeconfig)
    return time.perf_counter() - t0


def _label(ok):
    return "PASS" if ok else "FAIL"


if __name__ == "__main__":
    main()
