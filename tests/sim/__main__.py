"""python -m tests.sim up|down|status|inventory|join|leave|restart-apiserver: the gpuops test bed (see
docs/testbed.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import join, profiles, testbed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim", description=__doc__)
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=testbed.DEFAULT_STATE,
        help="where pidfiles, logs, PKI and kubeconfigs live (default: %(default)s; env GPUOPS_STATE)",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start the test bed (safe to repeat)")
    p_up.add_argument("--profile", default="ci", help="ci, demo, scale-1000 or a path to a profile .yml")
    p_up.add_argument("--port", type=int, help="kube-apiserver port on 127.0.0.1 (default: a free one)")
    p_up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for nodes to be Ready")
    p_up.add_argument(
        "--real-node",
        nargs="?",
        const=profiles.RealNode.nvml_profile,
        metavar="NVML_PROFILE",
        help="also join this machine as one real GPU node (root; docs/testbed.md, 'The real node')",
    )
    sub.add_parser("down", help="stop the processes `up` started and remove the state directory")
    sub.add_parser("status", help="one line per component; exit 1 if any crashed, 3 if not up")
    p_inv = sub.add_parser("inventory", help="print an Ansible YAML inventory of the simulated GPU hosts")
    p_inv.add_argument("--profile", help="profile to describe when the test bed is not up (default: demo)")
    p_val = sub.add_parser("validate", help="check a profile and print its node count")
    p_val.add_argument("profile")
    p_join = sub.add_parser("join", help="one more node of a GPU pool joins the running test bed (tests/sim/join.py)")
    p_join.add_argument("pool")
    p_join.add_argument("--taint", action="append", default=[], help="KEY[=VALUE]:EFFECT, as --register-with-taints")
    p_leave = sub.add_parser("leave", help="the last node that joined a GPU pool leaves the test bed")
    p_leave.add_argument("pool")
    p_restart = sub.add_parser(
        "restart-apiserver", help="stop kube-apiserver and start it again (a control-plane restart)"
    )
    for p in (p_up, sub.choices["down"], sub.choices["status"], p_inv, p_val, p_join, p_leave, p_restart):
        p.add_argument("--state-dir", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "up":
            testbed.up(args.profile, args.state_dir, args.port, args.timeout, real_node=args.real_node)
        elif args.cmd == "down":
            testbed.down(args.state_dir)
        elif args.cmd == "status":
            return testbed.status(args.state_dir)
        elif args.cmd == "inventory":
            sys.stdout.write(testbed.inventory(args.state_dir, args.profile))
        elif args.cmd == "join":
            print(join.join(args.state_dir, args.pool, args.taint))
        elif args.cmd == "leave":
            print(join.leave(args.state_dir, args.pool))
        elif args.cmd == "restart-apiserver":
            print(testbed.restart_apiserver(args.state_dir))
        elif args.cmd == "validate":
            prof = profiles.load(args.profile)
            print(f"profile {prof.name}: {prof.node_count} nodes in {len(prof.pools)} pools")
    except (testbed.TestbedError, profiles.ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
