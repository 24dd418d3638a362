"""python -m tests.sim.operator --kubeconfig <admin kubeconfig> --state-dir <dir>

The simulated GPU Operator (see docs/simulated-operator.md). Runs until SIGTERM/SIGINT. Writes
<state-dir>/dcgm-exporter.url (the DCGM exporter stand-in's /metrics URL) and logs to stderr, or to
<state-dir>/logs/gpu-operator-sim.log with --log-file.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.sim.operator", description=__doc__.splitlines()[2])
    ap.add_argument("--kubeconfig", required=True, help="admin kubeconfig of the test bed")
    ap.add_argument("--state-dir", required=True, help="directory for dcgm-exporter.url (the test bed's state dir)")
    ap.add_argument(
        "--namespace",
        default="gpu-operator",
        help="operand namespace when the ClusterPolicy has no Helm release-namespace annotation",
    )
    ap.add_argument("--dcgm-port", type=int, default=0, help="port for the DCGM exporter stand-in (0 = free port)")
    ap.add_argument("--period", type=float, default=1.0, help="seconds between periodic reconcile passes")
    ap.add_argument("--log-file", help="log to this file instead of stderr")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        filename=args.log_file,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    from kubernetes import client, config

    from . import dcgm
    from .controller import Controller

    cfg = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = 32
    api = client.ApiClient(cfg)
    ctl = Controller(api, namespace=args.namespace, period=args.period)

    def gpus():
        # the operand namespace of the ClusterPolicy, else of the GPUCluster (both deploy the DCGM exporter)
        owners = ctl.cps.snapshot() or ctl.dra.gcs.snapshot()
        if not owners:
            return []
        import tests.sim.operator.logic as L

        ns = L.annotations(owners[0]).get("meta.helm.sh/release-namespace") or args.namespace
        return dcgm.gpus_from_cache(ctl.nodes.snapshot(), ctl._pods_by_node(ns))

    exporter = dcgm.Exporter(gpus, port=args.dcgm_port).start()
    state = Path(args.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    ctl.dra.kubelet.checkpoint_dir = state / "dra-plugin"  # the claims the DRA kubelet plugin prepared, per node
    (state / "dcgm-exporter.url").write_text(exporter.url + "\n")
    logging.getLogger("sim.operator").info("DCGM exporter stand-in on %s", exporter.url)

    def stop(*_a):
        ctl.stop.set()
        ctl.wake.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t = threading.Thread(target=ctl.run, name="reconcile", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.5)
    exporter.server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
