"""A new GPU node joins the running test bed, or the last one that joined leaves (the admission flow of
docs/validate.md: a node registered with the admission taint is held until gpu_validate proves it).

`python -m tests.sim join <pool> [--taint KEY:EFFECT]...` creates one more node of a GPU pool of the bed's profile,
named after the pool's last (`t4-1` after `t4-0`), with the taints given (as kubelet's --register-with-taints would);
kwok manages it and the simulated operator deploys its operands. The state remembers it, so `inventory` lists its
host. `python -m tests.sim leave <pool>` deletes the last node that joined that pool.
"""

from __future__ import annotations

from pathlib import Path

from tests.sim import profiles
from tests.sim.testbed import State, TestbedError, _api


def _parse_taint(text: str) -> dict:
    key_value, sep, effect = text.rpartition(":")
    if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute") or not key_value:
        raise TestbedError(
            f"--taint must be KEY[=VALUE]:EFFECT with effect NoSchedule, PreferNoSchedule or NoExecute, got {text!r}"
        )
    key, _eq, value = key_value.partition("=")
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def _bed(state_dir: Path, pool_name: str):
    state = State(Path(state_dir))
    if not state.exists():
        raise TestbedError(f"no test bed in {state_dir}: run `python -m tests.sim up` first")
    state.load()
    prof = profiles.load(state.data.get("profile_source") or state.data["profile"])
    pools = {p.name: p for p in prof.gpu_pools()}
    if pool_name not in pools:
        raise TestbedError(f"profile {prof.name} has no GPU pool {pool_name!r} (GPU pools: {', '.join(sorted(pools))})")
    return state, prof, pools[pool_name]


def joined(state: State, pool_name: str) -> int:
    """How many nodes joined ``pool_name`` after `up`."""
    return int((state.data.get("joined") or {}).get(pool_name, 0))


def join(state_dir: Path, pool_name: str, taints: list[str] = ()) -> str:
    """Create the next node of ``pool_name`` with ``taints`` (``KEY[=VALUE]:EFFECT``); returns its name."""
    from kubernetes import client

    state, prof, pool = _bed(state_dir, pool_name)
    name = f"{pool.name}-{pool.count + joined(state, pool.name)}"
    body = profiles.node_manifest(pool, name, set_gpu_capacity=prof.operator != "simulated")
    body.setdefault("spec", {})["taints"] = [_parse_taint(t) for t in taints]
    client.CoreV1Api(_api(state.data["kubeconfig"])).create_node(body)
    state.data.setdefault("joined", {})[pool.name] = joined(state, pool.name) + 1
    state.save()
    return name


def leave(state_dir: Path, pool_name: str) -> str:
    """Delete the last node that joined ``pool_name``; returns its name."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    state, _prof, pool = _bed(state_dir, pool_name)
    count = joined(state, pool.name)
    if count == 0:
        raise TestbedError(f"no node joined pool {pool.name} since `up`")
    name = f"{pool.name}-{pool.count + count - 1}"
    try:
        client.CoreV1Api(_api(state.data["kubeconfig"])).delete_node(name)
    except ApiException as exc:
        if exc.status != 404:
            raise TestbedError(f"deleting node {name} failed: HTTP {exc.status} {exc.reason}") from None
    state.data["joined"][pool.name] = count - 1
    state.save()
    return name
