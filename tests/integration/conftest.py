"""Integration-test wiring: one real test bed (profile `ci`) per pytest run, the ``gpu_operator`` fixture
(the simulated GPU Operator on it) for every directory whose tests need the operator, and the ``dra`` fixture
(a ci-dra bed of its own in GPUCluster mode) for the DRA specs of any directory.

Set GPUOPS_TESTBED_STATE=<state dir> to reuse a test bed that is already up (`python -m tests.sim up`);
it is then left running at the end. Otherwise the fixture starts one in a temporary state directory and
stops it when the session ends. GPUOPS_TESTBED_PROFILE overrides the profile (default `ci`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.integration.simop_helpers import NS, Op, simulated_operator  # noqa: E402
from tests.integration.testbed.dra_helpers import CHART, GPUCLUSTER_MODE, DraBed  # noqa: E402
from tests.sim import profiles  # noqa: E402
from tests.sim import testbed as tb  # noqa: E402

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass
class Testbed:
    state_dir: Path
    profile: str
    kubeconfig: str
    sa_kubeconfig: str
    day2_kubeconfig: str
    audit_log: str
    chart_repo_url: str
    helm: str
    helm3: str
    apiserver_url: str
    node_count: int
    sa_username: str = f"system:serviceaccount:{tb.SA_NAMESPACE}:{tb.SA_NAME}"
    owned: bool = field(default=True, repr=False)

    # --- Kubernetes clients ---------------------------------------------------------------
    def api_client(self, least_privilege: bool = False):
        """A kubernetes.client.ApiClient for the admin (default) or the least-privilege identity."""
        from kubernetes import config

        return config.new_client_from_config(config_file=self.sa_kubeconfig if least_privilege else self.kubeconfig)

    def env(self, least_privilege: bool = True) -> dict:
        """Environment for ansible-playbook / kubernetes.core runs against this test bed."""
        kc = self.sa_kubeconfig if least_privilege else self.kubeconfig
        return {**os.environ, "K8S_AUTH_KUBECONFIG": kc, "KUBECONFIG": kc}

    # --- audit log ------------------------------------------------------------------------
    def audit_mark(self) -> int:
        """An offset into the audit log; pass it to audit_events() to see only later requests."""
        try:
            return os.path.getsize(self.audit_log)
        except OSError:
            return 0

    def audit_events(self, since: int = 0, user: str | None = None, writes_only: bool = False) -> list[dict]:
        """Audit events (Metadata level, stage ResponseComplete) after offset `since`, optionally filtered by
        user name (e.g. self.sa_username) and to write verbs (create/update/patch/delete/deletecollection)."""
        events = []
        try:
            with open(self.audit_log, "rb") as f:
                f.seek(since)
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev.get("stage") not in (None, "ResponseComplete", "Panic"):
                        continue
                    if user and ev.get("user", {}).get("username") != user:
                        continue
                    if writes_only and ev.get("verb") not in WRITE_VERBS:
                        continue
                    events.append(ev)
        except FileNotFoundError:
            pass
        return events

    def audit_writes(self, since: int = 0, user: str | None = None) -> list[dict]:
        return self.audit_events(since, user=user or self.sa_username, writes_only=True)

    # --- CLI ------------------------------------------------------------------------------
    def cli(self, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return run_cli(*args, "--state-dir", str(self.state_dir), env=env, timeout=timeout)


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m tests.sim ARGS`; --state-dir may appear anywhere after the subcommand."""
    return subprocess.run(
        [sys.executable, "-m", "tests.sim", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _from_state(state_dir: Path, owned: bool) -> Testbed:
    st = tb.State(state_dir).load()
    d = st.data
    return Testbed(
        state_dir=st.dir,
        profile=d["profile"],
        kubeconfig=d["kubeconfig"],
        sa_kubeconfig=d["sa_kubeconfig"],
        day2_kubeconfig=d["day2_kubeconfig"],
        audit_log=d["audit_log"],
        chart_repo_url=d["chart_repo_url"],
        helm=d["helm"],
        helm3=d["helm3"],
        apiserver_url=d["apiserver_url"],
        node_count=d["nodes"],
        owned=owned,
    )


@contextmanager
def profile_bed(state_dir: Path, profile: str):
    """A test bed of its own on ``profile`` in ``state_dir`` (a module's, beside the session's ``ci`` bed): ``(bed,
    its inventory file)``; stopped and removed afterwards, or at once when it did not come up."""
    proc = run_cli("up", "--profile", profile, "--state-dir", str(state_dir), timeout=900)
    if proc.returncode != 0:
        run_cli("down", "--state-dir", str(state_dir))
        pytest.fail(f"{profile} test bed did not come up: {proc.stderr.strip()[-2000:]}")
    try:
        inventory = state_dir / "inventory.yml"
        inventory.write_text(run_cli("inventory", "--state-dir", str(state_dir)).stdout)
        yield _from_state(state_dir, owned=True), inventory
    finally:
        run_cli("down", "--state-dir", str(state_dir))


def pytest_collection_modifyitems(items):
    """tests/integration/testbed/ first: its specs check the bed as `up` left it, before other directories install
    the operator, set MIG layouts and change nodes on the shared session bed (a stable sort keeps the rest in order)."""
    items.sort(key=lambda item: 0 if "/integration/testbed/" in str(item.path) else 1)


def worker_group(nodeid: str) -> str:
    """The group of the spec ``nodeid`` in a parallel run (`make integration`: two pytest-xdist workers): a group's
    specs run on one worker in collection order. Every spec on the DRA bed is one group (``tests/integration/dra/``
    and ``testbed/test_dra*.py``), each canary module is one (it has a canary bed of its own), and every other
    directory is one (its specs share the worker's session bed in the order they were written for)."""
    area, name = nodeid.split("::", 1)[0].split("/")[-2:]
    stem = name.removesuffix(".py")
    if area == "dra" or (area == "testbed" and stem.startswith("test_dra")):
        return "dra"
    return f"canary/{stem}" if area == "canary" else area


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling over :func:`worker_group` (its own ``xdist_group`` marks do not group under
    pytest 9, whose node ids they cannot rewrite); ``--no-loadscope-reorder`` keeps the groups in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return worker_group(nodeid)

    return WorkerGroups(config, log)


@pytest.fixture(scope="session")
def testbed(tmp_path_factory) -> Testbed:
    reuse = os.environ.get("GPUOPS_TESTBED_STATE")
    if reuse:
        st = tb.State(Path(reuse))
        if not st.exists() or not st.load().data.get("ready"):
            pytest.fail(f"GPUOPS_TESTBED_STATE={reuse} holds no running test bed; run `python -m tests.sim up`")
        yield _from_state(st.dir, owned=False)
        return
    state_dir = tmp_path_factory.mktemp("testbed")
    profile = os.environ.get("GPUOPS_TESTBED_PROFILE", "ci")
    t0 = time.monotonic()
    proc = run_cli("up", "--profile", profile, "--state-dir", str(state_dir), timeout=900)
    if proc.returncode != 0:
        run_cli("down", "--state-dir", str(state_dir))
        pytest.fail(f"test bed did not come up (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    sys.stderr.write(f"\n[testbed] profile {profile} up in {time.monotonic() - t0:.1f}s ({state_dir})\n")
    bed = _from_state(state_dir, owned=True)
    try:
        yield bed
    finally:
        run_cli("down", "--state-dir", str(state_dir))


# --- the simulated GPU Operator ----------------------------------------------------------------


def _annotate_from_profile(core, prof):
    for pool in prof.gpu_pools():
        want = {
            "sim.gpuops.io/gpu-product": pool.gpu.product,
            "sim.gpuops.io/gpu-count": str(pool.gpu.count),
            "sim.gpuops.io/gpu-memory": str(pool.gpu.memory_mib),
        }
        for n in pool.node_names():
            ann = core.read_node(n).metadata.annotations or {}
            missing = {k: v for k, v in want.items() if k not in ann}
            if "sim.gpuops.io/mig-capable" not in ann:
                missing["sim.gpuops.io/mig-capable"] = (
                    "true" if "A100" in pool.gpu.product or "H100" in pool.gpu.product else "false"
                )
            if missing:
                core.patch_node(n, {"metadata": {"annotations": missing}})


@pytest.fixture(scope="module")
def gpu_operator(testbed, tmp_path_factory):
    """The stand-in gpu-operator chart installed on the session test bed, as an :class:`Op`
    (tests/integration/simop_helpers.py); uninstalled, and node faults cleared, after the test module.

    If the test bed does not already run tests.sim.operator (profile ``operator: none``), one is started against
    the admin kubeconfig for the module and stopped afterwards. Nodes missing the sim.gpuops.io/gpu-* annotations
    (older test beds) get them from the profile first.
    """
    from kubernetes import client

    api = testbed.api_client()
    core = client.CoreV1Api(api)
    st = tb.State(testbed.state_dir).load()
    prof = profiles.load(st.data.get("profile_source") or testbed.profile)
    _annotate_from_profile(core, prof)
    work = tmp_path_factory.mktemp("simop")
    with simulated_operator(st, testbed.kubeconfig, work) as state_dir:
        helm_env = {
            **os.environ,
            "HELM_CACHE_HOME": str(work / "helm-cache"),
            "HELM_CONFIG_HOME": str(work / "helm-config"),
            "HELM_DATA_HOME": str(work / "helm-data"),
        }
        op = Op(testbed, api, prof, helm_env, state_dir)
        try:
            op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)  # clean slate
            op.install()
            yield op
        finally:
            for n in op.gpu_nodes:
                try:
                    core.patch_node(n, {"metadata": {"annotations": {"sim.gpuops.io/fault": None}}})
                except Exception:
                    pass
            op.helm("uninstall", "gpu-operator", "-n", NS, "--wait", check=False)


# --- the DRA bed -------------------------------------------------------------------------------
# A ci-dra bed of its own (the simulated operator in GPUCluster mode) with the stand-in chart v26.7.1 installed as the
# GPUCluster `gpu-cluster`: one bed for every DRA spec of the session (tests/integration/testbed/test_dra*.py and
# tests/integration/dra/), stopped right after the last spec that uses it (a session fixture alone would keep it
# idling, about 750 MB and 4 % of a core, through the rest of the suite). GPUOPS_DRA_TESTBED_STATE=<state dir>
# reuses a running ci-dra bed and leaves it up.

_DRA_STARTED: list[Path] = []  # the state dir of the DRA bed this session started, until it is stopped


def _stop_dra_bed() -> None:
    while _DRA_STARTED:
        run_cli("down", "--state-dir", str(_DRA_STARTED.pop()))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last spec that uses the DRA bed (module fixtures are torn down by now), stop the bed."""
    if "dra" not in item.fixturenames:
        return
    later = item.session.items[item.session.items.index(item) + 1 :]
    if not any("dra" in i.fixturenames for i in later):
        _stop_dra_bed()


@pytest.fixture(scope="session")
def dra(tmp_path_factory) -> DraBed:
    reuse = os.environ.get("GPUOPS_DRA_TESTBED_STATE")
    state_dir = Path(reuse) if reuse else tmp_path_factory.mktemp("dra-bed")
    if not reuse:
        t0 = time.monotonic()
        _DRA_STARTED.append(state_dir)
        proc = run_cli("up", "--profile", "ci-dra", "--state-dir", str(state_dir), timeout=900)
        if proc.returncode != 0:
            _stop_dra_bed()
            pytest.fail(f"DRA test bed did not come up (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        sys.stderr.write(f"\n[testbed] profile ci-dra up in {time.monotonic() - t0:.1f}s ({state_dir})\n")
    try:
        bed = _from_state(state_dir, owned=not reuse)
        work = tmp_path_factory.mktemp("dra-helm")
        env = {**os.environ, **{f"HELM_{k}_HOME": str(work / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}}
        sets = [x for s in GPUCLUSTER_MODE for x in ("--set", s)]
        argv = [bed.helm, "upgrade", "--install", "gpu-operator", "gpu-operator", "--repo", bed.chart_repo_url]
        argv += ["--version", CHART, "-n", NS, "--create-namespace", "--wait", "--timeout", "300s", *sets]
        r = subprocess.run(
            [*argv, "--kubeconfig", bed.kubeconfig], capture_output=True, text=True, env=env, timeout=360, check=False
        )
        assert r.returncode == 0, r.stderr[-2000:]
        dra_bed = DraBed(bed)
        dra_bed.wait_healthy(timeout=120)
        yield dra_bed
    finally:
        _stop_dra_bed()
