"""The gpuops test bed: a real kube-apiserver/etcd/KCM/scheduler on 127.0.0.1 with kwok-simulated nodes.

Entry points: up(), down(), status(), inventory(); `python -m tests.sim` wraps them. Every process is a child
started here, recorded in <state>/pids/<name>.pid and in <state>/state.json; `down` stops exactly those PIDs
(after checking /proc/<pid>/cmdline) and removes the state directory.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from . import host_trees, pki, profiles

REPO_ROOT = Path(__file__).resolve().parents[2]
SIM_DIR = Path(__file__).resolve().parent
STAGES_DIR = SIM_DIR / "kwok_stages"
TESTCHART_DIR = SIM_DIR / "testchart"
RBAC_FILE = REPO_ROOT / "docs" / "rbac.yml"
CACHE = Path(
    os.environ.get("GPUOPS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuops"
).expanduser()
BIN_DIR = Path(os.environ.get("GPUOPS_BIN") or CACHE / "bin").expanduser()
DEFAULT_STATE = Path(os.environ.get("GPUOPS_STATE") or CACHE / "testbed").expanduser()

SA_NAMESPACE = "gpuops-system"
SA_NAME = "gpuops-automation"  # the installer identity of docs/rbac.yml (cluster-admin-equivalent, documented)
DAY2_SA_NAME = "gpuops-day2"  # the day-2 identity: validate, triage, audit, canary status, smoke
SA_TOKEN_SECONDS = 5 * 365 * 24 * 3600
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "helm",
    "helm3",
    "upgrade-controller",
)
# Used by the tests but not by a running bed: `make site` builds them after the site's binaries, so `up` goes on
# without them (the state names null).
TEST_ONLY_BINARIES = ("helm3",)
# Start order; down stops in reverse.
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "chart-repo",
    "gpu-operator-sim",
    "upgrade-controller",
)


class TestbedError(RuntimeError):
    """A one-line, user-facing failure."""


# --------------------------------------------------------------------------------------------- helpers


def log(msg: str) -> None:
    print(f"[testbed {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def binary(name: str) -> str:
    path = optional_binary(name)
    if path is None:
        raise TestbedError(f"missing binary {name} (looked for {BIN_DIR / name}); build it with `make sim-binaries`")
    return path


def optional_binary(name: str) -> str | None:
    """The resolved path of a cached binary, or None when it is not built (yet)."""
    path = BIN_DIR / name
    return str(path.resolve()) if path.exists() and os.access(path, os.X_OK) else None


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _unused in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def owned(pid: int, marker: str) -> bool:
    """True when pid is alive and its command line still carries the marker we started it with."""
    return pid_alive(pid) and any(marker in a for a in cmdline(pid))


def upgrade_controller_argv(path: str, kubeconfig: Path | str) -> list[str]:
    """The bed's driver-upgrade controller against ``kubeconfig`` (a reconcile pass every half second)."""
    return [path, "--kubeconfig", str(kubeconfig), "--interval", "500ms"]


def _kubeconfig(path: Path, server: str, ca: str, user: dict, name: str) -> None:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": "gpuops-testbed", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": "gpuops-testbed", "user": name}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)


def _https_ok(url: str, ctx: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=3) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


# --------------------------------------------------------------------------------------------- state


class State:
    def __init__(self, state_dir: Path):
        self.dir = Path(state_dir).expanduser().resolve()
        self.file = self.dir / "state.json"
        self.data: dict = {}

    def exists(self) -> bool:
        return self.file.is_file()

    def load(self) -> "State":
        self.data = json.loads(self.file.read_text())
        return self

    def save(self) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(self.file)

    @property
    def components(self) -> dict:
        return self.data.setdefault("components", {})

    def check(self) -> list[tuple[str, dict, bool]]:
        return [(name, c, owned(c["pid"], c["marker"])) for name, c in self.components.items()]


# --------------------------------------------------------------------------------------------- processes


def _spawn(state: State, name: str, argv: list[str], marker: str, env: dict | None = None) -> int:
    logf = state.dir / "logs" / f"{name}.log"
    with open(logf, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(REPO_ROOT),
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    (state.dir / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")
    state.components[name] = {"pid": proc.pid, "marker": marker, "log": str(logf), "argv": argv}
    state.save()
    return proc.pid


def _wait(what: str, state: State, name: str | None, probe, timeout: float, interval: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        if name and not pid_alive(state.components[name]["pid"]):
            raise TestbedError(f"{name} exited during start-up; see {state.components[name]['log']}")
        time.sleep(interval)
    where = f"; see {state.components[name]['log']}" if name else ""
    raise TestbedError(f"timed out after {timeout:.0f}s waiting for {what}{where}")


def _stop(pid: int, marker: str, grace: float = 10.0) -> None:
    if not owned(pid, marker):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    if owned(pid, marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)


def _stop_all(state: State) -> None:
    try:
        if state.data.get("real_node"):  # first, while the API server it reports to still runs
            from tests.sim.realnode import node as real_node

            real_node.down(state)
    finally:
        comps = state.components
        for name in reversed(COMPONENTS):
            c = comps.get(name)
            if c:
                _stop(c["pid"], c["marker"])


# --------------------------------------------------------------------------------------------- config files

AUDIT_POLICY = """\
# gpuops test bed audit policy: every request at Metadata level (who, verb, resource, response code),
# minus the node-lease renewals, which are pure noise. Tests read write verbs from audit.log.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: [leases]
- level: Metadata
"""


def _kwok_config(state: State, prof: profiles.Profile) -> Path:
    docs = [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "options": {
                "nodeLeaseDurationSeconds": prof.node_lease_duration_seconds,
                "nodePlayStageParallelism": 8,
                "podPlayStageParallelism": 8,
                "nodeLeaseParallelism": 8,
                "enableDebuggingHandlers": True,
            },
        }
    ]
    for f in sorted(STAGES_DIR.glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if not d:
                continue
            if d.get("kind") == "Stage" and d["metadata"]["name"] == "node-heartbeat":
                ms = prof.heartbeat_interval_seconds * 1000
                d["spec"]["delay"] = {"durationMilliseconds": ms, "jitterDurationMilliseconds": ms * 2}
            docs.append(d)
    logs_dir = state.dir / "pod-logs"
    logs_dir.mkdir(exist_ok=True)
    default_log = logs_dir / "default.log"
    # kwok replays logs in the CRI log format: "<RFC3339Nano> <stream> <F|P> <text>".
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    default_log.write_text(
        f"{stamp} stdout F gpuops test bed: this container ran under kwok; no process produced output.\n"
    )
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "gpuops-default-logs"},
            "spec": {"logs": [{"logsFile": str(default_log), "previousLogsFile": str(default_log), "follow": False}]},
        }
    )
    path = state.dir / "kwok.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


# --------------------------------------------------------------------------------------------- API objects


def _api(kubeconfig: str):
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = 32
    cfg.retries = 3
    return client.ApiClient(cfg)


def _create_nodes(api, prof: profiles.Profile, set_gpu_capacity: bool) -> int:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api)
    work = [(pool, name) for pool in prof.pools for name in pool.node_names()]

    def one(item):
        pool, name = item
        body = profiles.node_manifest(pool, name, set_gpu_capacity)
        for attempt in range(5):
            try:
                core.create_node(body)
                return
            except ApiException as exc:
                if exc.status == 409:
                    return
                if exc.status in (429, 500, 503, 504) and attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise TestbedError(f"creating node {name} failed: HTTP {exc.status} {exc.reason}") from None

    with concurrent.futures.ThreadPoolExecutor(max_workers=prof.create_parallelism) as ex:
        list(ex.map(one, work))
    return len(work)


def _nodes_ready(api, want: int) -> int:
    from kubernetes import client

    ready = 0
    cont = None
    while True:
        resp = client.CoreV1Api(api).list_node(limit=500, _continue=cont)
        for n in resp.items:
            for c in n.status.conditions or []:
                if c.type == "Ready" and c.status == "True":
                    ready += 1
        cont = resp.metadata._continue
        if not cont:
            return ready


def _rbac_docs() -> list[dict]:
    if not RBAC_FILE.is_file():
        raise TestbedError(f"missing {RBAC_FILE}: the automation ClusterRole the least-privilege identity uses")
    return [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d]


def _apply_rbac(api, state: State) -> None:
    """Apply docs/rbac.yml as it is: its namespaces, ServiceAccounts, roles and bindings (roles replaced when they
    exist, so an edited file takes effect on a running bed)."""
    from kubernetes import client, utils
    from kubernetes.client.rest import ApiException

    rbac = client.RbacAuthorizationV1Api(api)
    roles = []
    for d in _rbac_docs():
        if d.get("kind") == "ClusterRole":
            roles.append(d["metadata"]["name"])
            try:
                rbac.create_cluster_role(d)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                rbac.replace_cluster_role(d["metadata"]["name"], d)
            continue
        try:
            utils.create_from_dict(api, d)
        except utils.FailToCreateError as exc:
            if any(e.status != 409 for e in exc.api_exceptions):
                raise
    if set(roles) != {SA_NAME, DAY2_SA_NAME}:
        raise TestbedError(f"{RBAC_FILE} must define the ClusterRoles {SA_NAME} and {DAY2_SA_NAME}, found {roles}")
    state.data["cluster_roles"] = roles


def _token(api, name: str) -> str:
    from kubernetes import client

    tr = client.CoreV1Api(api).create_namespaced_service_account_token(
        name, SA_NAMESPACE, {"spec": {"audiences": [], "expirationSeconds": SA_TOKEN_SECONDS}}
    )
    return tr.status.token


# --------------------------------------------------------------------------------------------- chart repo


def _build_chart_repo(state: State) -> Path:
    repo = state.dir / "chart-repo"
    repo.mkdir(exist_ok=True)
    helm = binary("helm")
    if importlib.util.find_spec("tests.sim.chart") is not None:
        from . import chart  # written by the chart helper: packages the stand-in gpu-operator charts

        if hasattr(chart, "build_repo"):
            chart.build_repo(str(repo))
    if TESTCHART_DIR.is_dir():
        subprocess.run(
            [helm, "package", str(TESTCHART_DIR), "-d", str(repo)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    index = repo / "index.yaml"
    argv = [helm, "repo", "index", str(repo)]
    if index.exists():
        argv += ["--merge", str(index)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return repo


# --------------------------------------------------------------------------------------------- up


def _running_summary(state: State) -> str:
    d = state.data
    return (
        f"test bed '{d['profile']}' is running in {state.dir}: {d['apiserver_url']}; "
        f"admin kubeconfig {d['kubeconfig']}; least-privilege kubeconfig {d['sa_kubeconfig']}; "
        f"chart repo {d['chart_repo_url']}"
    )


def up(
    profile: str = "ci",
    state_dir: Path | str = DEFAULT_STATE,
    port: int | None = None,
    timeout: float = 180.0,
    real_node: str | None = None,
) -> State:
    """Start the bed of ``profile``; ``real_node`` (an NVML fixture name) joins this machine as a real node too."""
    prof = profiles.load(profile)
    if real_node and not prof.real_node:
        prof.real_node = profiles.RealNode(nvml_profile=real_node)
    state = State(Path(state_dir))
    if state.exists():
        state.load()
        checks = state.check()
        dead = [(n, c) for n, c, ok in checks if not ok]
        if not dead and state.data.get("ready"):
            if state.data.get("profile") != prof.name:
                raise TestbedError(
                    f"a test bed with profile '{state.data.get('profile')}' is already running "
                    f"in {state.dir}; run `python -m tests.sim down` first"
                )
            log("already up; nothing to do")
            print(_running_summary(state))
            return state
        if not dead and checks:
            raise TestbedError(
                f"test bed in {state.dir} is still starting (another `up` is running) or its `up` "
                "was killed; wait for it, or run `python -m tests.sim down` first"
            )
        if dead and any(ok for _unused, _unused, ok in checks):
            n, c = dead[0]
            raise TestbedError(
                f"test bed in {state.dir} is partly running ({n} is not running, log {c['log']}); "
                "run `python -m tests.sim down` first"
            )
        _stop_all(state)  # stale state from a crashed run: nothing of ours is alive, clean it
    if port is not None and port_in_use(port):
        raise TestbedError(
            f"port {port} on 127.0.0.1 is already in use; pass another --port, or omit --port to pick a free one"
        )
    bins = {b: binary(b) for b in BINARIES if b not in TEST_ONLY_BINARIES}
    bins.update({b: optional_binary(b) for b in TEST_ONLY_BINARIES})
    if state.dir.exists():
        shutil.rmtree(state.dir)
    for sub in ("logs", "pids", "pki", "etcd"):
        (state.dir / sub).mkdir(parents=True, exist_ok=True)
    state.data = {
        "profile": prof.name,
        "profile_source": prof.source,
        "state_dir": str(state.dir),
        "started": time.time(),
        "ready": False,
        "bin_dir": str(BIN_DIR),
        "helm": bins["helm"],
        "helm3": bins["helm3"],
    }
    state.save()
    t0 = time.monotonic()

    def _terminated(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: leave signal handling alone
        previous = None
    try:
        _up(state, prof, bins, port, timeout)
    except BaseException as exc:
        log("start-up failed; stopping what was started")
        _stop_all(state)
        for f in (state.dir / "pids").glob("*.pid"):
            f.unlink()
        state.file.unlink(missing_ok=True)
        if isinstance(exc, KeyboardInterrupt):
            raise TestbedError("interrupted; everything that was started has been stopped") from None
        if isinstance(exc, TestbedError):
            raise
        raise TestbedError(
            f"up failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
            f"(logs in {state.dir / 'logs'})"
        ) from exc
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    state.data["up_seconds"] = round(time.monotonic() - t0, 1)
    state.data["ready"] = True
    state.save()
    log(f"up in {state.data['up_seconds']}s")
    print(_running_summary(state))
    return state


def _up(state: State, prof: profiles.Profile, bins: dict, port: int | None, timeout: float) -> None:
    d = state.dir
    etcd_port, etcd_peer, kcm_port, sched_port, kwok_port, repo_port, api_free = free_ports(7)
    api_port = port or api_free
    certs = pki.generate(d / "pki")
    ca, crt, key = certs["ca.crt"], certs["admin.crt"], certs["admin.key"]
    server = f"https://127.0.0.1:{api_port}"
    kubeconfig = d / "kubeconfig"
    _kubeconfig(kubeconfig, server, ca, {"client-certificate": crt, "client-key": key}, "gpuops-admin")
    audit_log = d / "audit.log"
    (d / "audit-policy.yaml").write_text(AUDIT_POLICY)
    state.data.update(
        {
            "apiserver_url": server,
            "kubeconfig": str(kubeconfig),
            "audit_log": str(audit_log),
            "sa_kubeconfig": str(d / "sa-kubeconfig"),
            "day2_kubeconfig": str(d / "day2-kubeconfig"),
            "ports": {
                "kube-apiserver": api_port,
                "etcd": etcd_port,
                "etcd-peer": etcd_peer,
                "kube-controller-manager": kcm_port,
                "kube-scheduler": sched_port,
                "kwok": kwok_port,
                "chart-repo": repo_port,
            },
        }
    )
    state.save()

    log(f"etcd on 127.0.0.1:{etcd_port}")
    _spawn(
        state,
        "etcd",
        [
            bins["etcd"],
            "--name=node0",
            f"--data-dir={d / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=node0=http://127.0.0.1:{etcd_peer}",
            "--auto-compaction-retention=1",
            "--quota-backend-bytes=4294967296",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
        marker=bins["etcd"],
    )
    _wait("etcd /health", state, "etcd", lambda: _http_ok(f"http://127.0.0.1:{etcd_port}/health"), 30)

    log(f"kube-apiserver on {server}")
    _spawn(
        state,
        "kube-apiserver",
        [
            bins["kube-apiserver"],
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--etcd-prefix=/registry",
            "--bind-address=127.0.0.1",
            f"--secure-port={api_port}",
            f"--tls-cert-file={crt}",
            f"--tls-private-key-file={key}",
            f"--client-ca-file={ca}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}",
            f"--proxy-client-cert-file={crt}",
            f"--proxy-client-key-file={key}",
            f"--requestheader-client-ca-file={ca}",
            f"--requestheader-allowed-names={pki.ADMIN_CN}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--kubelet-client-certificate={crt}",
            f"--kubelet-client-key={key}",
            "--kubelet-preferred-address-types=InternalIP",
            "--max-requests-inflight=0",
            "--max-mutating-requests-inflight=0",
            "--enable-priority-and-fairness=false",
            f"--audit-policy-file={d / 'audit-policy.yaml'}",
            f"--audit-log-path={audit_log}",
            "--audit-log-maxsize=500",
            "--audit-log-maxbackup=1",
            "--audit-log-mode=blocking",
            "--profiling=false",
            "--event-ttl=2h",
            f"--cert-dir={d / 'pki'}",
        ],
        marker=bins["kube-apiserver"],
    )
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(crt, key)
    _wait("kube-apiserver /readyz", state, "kube-apiserver", lambda: _https_ok(f"{server}/readyz", ctx), 150)

    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    always = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
    grace = prof.node_monitor_grace_period_seconds
    log("kube-controller-manager and kube-scheduler")
    _spawn(
        state,
        "kube-controller-manager",
        [
            bins["kube-controller-manager"],
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={kcm_port}",
            always,
            f"--root-ca-file={ca}",
            f"--service-account-private-key-file={key}",
            f"--cluster-signing-cert-file={ca}",
            f"--cluster-signing-key-file={d / 'pki' / 'ca.key'}",
            "--leader-elect=false",
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--node-monitor-period=5s",
            f"--node-monitor-grace-period={grace}s",
            f"--cert-dir={d / 'pki'}",
        ],
        marker=bins["kube-controller-manager"],
    )
    _spawn(
        state,
        "kube-scheduler",
        [
            bins["kube-scheduler"],
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={sched_port}",
            always,
            "--leader-elect=false",
            f"--cert-dir={d / 'pki'}",
        ],
        marker=bins["kube-scheduler"],
    )
    _wait(
        "kube-controller-manager /healthz",
        state,
        "kube-controller-manager",
        lambda: _https_ok(f"https://127.0.0.1:{kcm_port}/healthz", insecure),
        120,
    )
    _wait(
        "kube-scheduler /healthz",
        state,
        "kube-scheduler",
        lambda: _https_ok(f"https://127.0.0.1:{sched_port}/healthz", insecure),
        120,
    )

    log(f"kwok (kubelet API on 127.0.0.1:{kwok_port})")
    kwok_cfg = _kwok_config(state, prof)
    _spawn(
        state,
        "kwok",
        [
            bins["kwok"],
            f"--kubeconfig={kubeconfig}",
            f"--config={kwok_cfg}",
            f"--tls-cert-file={crt}",
            f"--tls-private-key-file={key}",
            "--node-ip=127.0.0.1",
            "--node-name=localhost",
            f"--node-port={kwok_port}",
            f"--server-address=127.0.0.1:{kwok_port}",
            f"--node-lease-duration-seconds={prof.node_lease_duration_seconds}",
            # Only the simulated nodes (profiles.node_manifest annotates them): a real node's kubelet owns its own.
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        ],
        marker=bins["kwok"],
    )

    log("chart repository")
    repo = _build_chart_repo(state)
    _spawn(
        state,
        "chart-repo",
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(repo), str(repo_port)],
        marker=str(repo),
    )
    state.data["chart_repo_url"] = f"http://127.0.0.1:{repo_port}"
    state.data["chart_repo_dir"] = str(repo)
    state.save()

    api = _api(str(kubeconfig))
    from kubernetes import client

    core = client.CoreV1Api(api)

    def default_sa():
        try:
            core.read_namespaced_service_account("default", "default")
            return True
        except Exception:
            return False

    _wait(
        "serviceaccount default/default (created by kube-controller-manager)",
        state,
        "kube-controller-manager",
        default_sa,
        60,
    )

    log("the installer and day-2 identities of docs/rbac.yml")
    _apply_rbac(api, state)
    for name, file in ((SA_NAME, "sa-kubeconfig"), (DAY2_SA_NAME, "day2-kubeconfig")):
        _kubeconfig(d / file, server, ca, {"token": _token(api, name)}, f"{SA_NAMESPACE}-{name}")

    simulated = prof.operator == "simulated"
    have_operator = (SIM_DIR / "operator" / "__main__.py").is_file()
    if simulated and not have_operator:
        log("profile wants the simulated operator but tests/sim/operator is absent; setting GPU capacity directly")
    set_capacity = not (simulated and have_operator)
    t = time.monotonic()
    n = _create_nodes(api, prof, set_capacity)
    log(f"created {n} nodes in {time.monotonic() - t:.1f}s; waiting for Ready")
    state.data["nodes"] = n
    _wait(f"{n} nodes Ready", state, "kwok", lambda: _nodes_ready(api, n) >= n, timeout + n * 0.2, interval=1)
    _wait(
        "the 'kube-root-ca.crt' ConfigMap",
        state,
        "kube-controller-manager",
        lambda: _configmap(core, "default", "kube-root-ca.crt"),
        30,
    )
    if simulated and have_operator:
        log("simulated GPU operator")
        _spawn(
            state,
            "gpu-operator-sim",
            [sys.executable, "-m", "tests.sim.operator", "--kubeconfig", str(kubeconfig), "--state-dir", str(d)],
            marker="tests.sim.operator",
        )
        # the driver upgrade states: NVIDIA's state machine (tests/sim/upgrade-controller)
        log("driver upgrade controller")
        _spawn(
            state,
            "upgrade-controller",
            upgrade_controller_argv(bins["upgrade-controller"], kubeconfig),
            marker=bins["upgrade-controller"],
        )
        time.sleep(1)
        for name in ("gpu-operator-sim", "upgrade-controller"):
            if not pid_alive(state.components[name]["pid"]):
                raise TestbedError(f"{name} exited at start; see {state.components[name]['log']}")
    if prof.real_node:
        from tests.sim.realnode import node as real_node

        real_node.up(state, prof.real_node, api)
    _wait(
        "chart repository index.yaml",
        state,
        "chart-repo",
        lambda: _http_ok(f"http://127.0.0.1:{repo_port}/index.yaml"),
        15,
    )
    api.close()


def _configmap(core, ns, name) -> bool:
    try:
        core.read_namespaced_config_map(name, ns)
        return True
    except Exception:
        return False


# --------------------------------------------------------------------------------------------- down/status


def down(state_dir: Path | str = DEFAULT_STATE) -> None:
    state = State(Path(state_dir))
    if not state.exists():
        leftovers = list((state.dir / "pids").glob("*.pid")) if state.dir.exists() else []
        if not leftovers:
            if state.dir.exists():
                shutil.rmtree(state.dir)
            print(f"no test bed in {state.dir}; nothing to stop")
            return
    else:
        state.load()
        _stop_all(state)
    if state.dir.exists():
        shutil.rmtree(state.dir)
    print(f"test bed in {state.dir} stopped and removed")


def restart_apiserver(state_dir: Path | str = DEFAULT_STATE, timeout: float = 150) -> int:
    """Stop the running bed's kube-apiserver and start it again with the same arguments (etcd keeps every object and
    its history); returns when /readyz answers, with the new pid. Clients see their connections drop, watches
    included, as on a control-plane restart."""
    state = State(Path(state_dir))
    if not state.exists():
        raise TestbedError(f"no test bed in {state_dir}: run `python -m tests.sim up` first")
    state.load()
    comp = state.components.get("kube-apiserver")
    if not comp:
        raise TestbedError("the test bed has no kube-apiserver to restart")
    _stop(comp["pid"], comp["marker"])
    log("kube-apiserver: restarting")
    pid = _spawn(state, "kube-apiserver", comp["argv"], comp["marker"])
    pki_dir = state.dir / "pki"
    ctx = ssl.create_default_context(cafile=str(pki_dir / "ca.crt"))
    ctx.load_cert_chain(str(pki_dir / "admin.crt"), str(pki_dir / "admin.key"))
    server = state.data["apiserver_url"]
    _wait("kube-apiserver /readyz", state, "kube-apiserver", lambda: _https_ok(f"{server}/readyz", ctx), timeout)
    return pid


def status(state_dir: Path | str = DEFAULT_STATE) -> int:
    """Print one line per component; return 0 when all run, 1 when any crashed, 3 when nothing is up."""
    state = State(Path(state_dir))
    if not state.exists():
        print(f"not running (no state in {state.dir})")
        return 3
    state.load()
    rc = 0
    print(f"profile {state.data.get('profile')}  state {state.dir}  ready {state.data.get('ready')}")
    for name, c, ok in state.check():
        if ok:
            print(f"{name:<24} running  pid {c['pid']:<8} log {c['log']}")
        else:
            rc = 1
            print(f"{name:<24} CRASHED  pid {c['pid']:<8} log {c['log']}")
    for key in ("apiserver_url", "kubeconfig", "sa_kubeconfig", "day2_kubeconfig", "audit_log", "chart_repo_url"):
        if key in state.data:
            print(f"{key:<24} {state.data[key]}")
    if rc:
        print("one or more components crashed: read the log named above, then `python -m tests.sim down`")
    return rc


def inventory(state_dir: Path | str = DEFAULT_STATE, profile: str | None = None) -> str:
    state = State(Path(state_dir))
    if state.exists():
        state.load()
    prof = profiles.load(profile or state.data.get("profile_source") or state.data.get("profile") or "demo")
    sdir = state.dir
    hosts = {}
    joined = state.data.get("joined") or {}  # nodes added by `python -m tests.sim join` (tests/sim/join.py)
    for pool in prof.gpu_pools():
        for name in [f"{pool.name}-{i}" for i in range(pool.count + int(joined.get(pool.name, 0)))]:
            h = {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "k8s_node_name": name,
                "gpu_pool": pool.name,
            }
            if pool.host_tree:
                h["gpu_host_root"] = str(host_trees.host_root(pool.host_tree, pool.nvml_profile, CACHE))
            if pool.nvml_profile:
                h["gpu_nvml_fixture"] = str(SIM_DIR / "nvml" / "profiles" / f"{pool.nvml_profile}.yml")
            hosts[name] = h
    real = state.data.get("real_node") or (prof.real_node and vars(prof.real_node))  # joined with --real-node too
    if real:  # this machine: its own files, the fake NVML of its driver root
        hosts[real["name"]] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "k8s_node_name": real["name"],
            "gpu_pool": "real-node",
            "gpu_host_root": "/",
            "gpu_nvml_fixture": str(SIM_DIR / "nvml" / "profiles" / f"{real['nvml_profile']}.yml"),
        }
    inv = {
        "all": {
            "vars": {
                "gpuops_kubeconfig": state.data.get("sa_kubeconfig", str(sdir / "sa-kubeconfig")),
                "gpuops_admin_kubeconfig": state.data.get("kubeconfig", str(sdir / "kubeconfig")),
                "gpuops_audit_log": state.data.get("audit_log", str(sdir / "audit.log")),
                "gpuops_testbed_profile": prof.name,
            },
            "children": {
                "gpu_hosts": {"hosts": hosts},
                "k8s_cluster": {
                    "hosts": {
                        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                    }
                },
            },
        }
    }
    if real:
        from tests.sim.realnode import images

        # the device plugin the real node runs (its image is built here under this tag), and the smoke pod's
        # verdict: the CUDA sample's line where only real nodes run GPUs, kwok's everywhere else
        inv["all"]["vars"]["gpuops_operator_values"] = {"devicePlugin": {"version": images.DEVICE_PLUGIN_VERSION}}
        # the real node is this machine, whatever OS builds the collection: its OS is reported, not a stop
        inv["all"]["vars"]["gpu_baseline_severity"] = {"os.supported": "warn"}
        # no DCGM runs there (nvidia.com/gpu.deploy.dcgm-exporter=false): nothing to hold its monitoring to
        inv["all"]["vars"]["gpu_validate_monitoring"] = False
        if not prof.gpu_pools():
            inv["all"]["vars"]["gpuops_smoke_expected_output"] = "Test PASSED"
    if "chart_repo_url" in state.data:
        inv["all"]["vars"]["gpuops_chart_repo_url"] = state.data["chart_repo_url"]
    if prof.operator_mode == "gpucluster":
        # DRA through the operator's GPUCluster: the first stand-in chart that ships the GPUCluster CRD
        inv["all"]["vars"].update({"gpuops_operator_mode": "gpucluster", "gpuops_operator_chart_version": "v26.7.1"})
    return yaml.safe_dump(inv, sort_keys=False)
