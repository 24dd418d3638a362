"""Benchmark: the simulated GPU Operator's rollout on the `scale-1000` test bed (moved here from a test that
skipped below 500 nodes).

After `helm install` of the stand-in chart it measures, on 1,000 GPU nodes:

* labelled: every GPU node carries nvidia.com/gpu.present (the controller's own work);
* floor: the last device-plugin pod Ready (the real DaemonSet controller, scheduler and kwok placing and running
  7,000 operand pods; the controller cannot advertise a GPU before its node's plugin pod is Ready);
* advertised: every node's allocatable nvidia.com/gpu equals its GPU count and the ClusterPolicy is ready.

It prints `advertised / floor` (how much the controller adds to the rollout the real controllers need).

    .venv/bin/python bench/operator_scale.py [--state-dir DIR]

Without --state-dir it starts `python -m tests.sim up --profile scale-1000` in a temporary directory and stops it
afterwards. Prints figures; never run from the test suite.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from pathlib import Path

# _common (bench/_common.py) first: it makes the collection and tests.* importable
from _common import parser, scale_testbed

from tests.integration.simop_helpers import NS, Op, simulated_operator, wait_for
from tests.sim import profiles
from tests.sim import testbed as tb


class Bed:
    def __init__(self, state):
        d = state.data
        self.kubeconfig, self.chart_repo_url, self.helm = d["kubeconfig"], d["chart_repo_url"], d["helm"]


def _ts(value):
    return value.timestamp() if isinstance(value, datetime.datetime) else None


def main():
    opts = parser(__doc__).parse_args()
    with scale_testbed(opts.state_dir) as state_dir:
        run_benchmark(state_dir)


def run_benchmark(state_dir):
    from kubernetes import config

    state = tb.State(Path(state_dir)).load()
    bed = Bed(state)
    api = config.new_client_from_config(config_file=bed.kubeconfig)
    prof = profiles.load(state.data.get("profile_source") or state.data["profile"])
    work = Path(tempfile.mkdtemp(prefix="gpuops-simop-"))
    with simulated_operator(state, bed.kubeconfig, work, start_timeout=60):
        helm_env = {
            **os.environ,
            **{k: str(work / k.lower()) for k in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")},
        }
        op = Op(bed, api, prof, helm_env, work)
        n = len(op.gpu_nodes)
        t0 = time.time()
        op.install()
        print("helm install returned after %.1fs" % (time.time() - t0), flush=True)

        def labelled():
            return len(op.core.list_node(label_selector="nvidia.com/gpu.present=true").items) >= n

        wait_for(labelled, 300, interval=1, what="every GPU node labelled")
        t_label = time.time() - t0

        def advertised():
            ok = 0
            for node in op.core.list_node(label_selector="nvidia.com/gpu.present=true").items:
                want = str(op.gpu_nodes[node.metadata.name].count)
                ok += (node.status.allocatable or {}).get("nvidia.com/gpu") == want
            return ok == n and op.cp_state() == "ready"

        wait_for(advertised, 1800, interval=5, what="every GPU advertised and the ClusterPolicy ready")
        t_adv = time.time() - t0
        ready_at = []
        for pod in op.core.list_namespaced_pod(NS, label_selector="app=nvidia-device-plugin-daemonset").items:
            for cond in pod.status.conditions or []:
                if cond.type == "Ready" and cond.status == "True":
                    ready_at.append(_ts(cond.last_transition_time))
        t_floor = max(t for t in ready_at if t) - t0
        print(
            json.dumps(
                {
                    "gpu_nodes": n,
                    "labelled_s": round(t_label, 1),
                    "floor_s": round(t_floor, 1),
                    "advertised_s": round(t_adv, 1),
                }
            )
        )
        print("every GPU node labelled in %.1fs" % t_label)
        print("last device-plugin pod Ready (floor) after %.1fs" % t_floor)
        print("every GPU advertised, ClusterPolicy ready after %.1fs" % t_adv)
        print("advertised / floor = %.2fx  (the poll interval of this benchmark is 5 s)" % (t_adv / t_floor))
        op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)


if __name__ == "__main__":
    main()
