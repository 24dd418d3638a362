"""A module ended by SIGTERM (a task timeout, Ctrl-C, a closed terminal) leaves no credential on disk: the client key
the kubernetes library writes for an inline kubeconfig lived in the module's own temporary directory, removed on the
way out, and the run's pods are gone too."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from helpers import wait_for
from kubernetes import client

ROOT = Path(__file__).resolve().parents[3]


def inline_admin_kubeconfig(testbed):
    """The bed's admin kubeconfig with its certificate, key and CA inline (``*-data``), as a mapping."""
    cfg = yaml.safe_load(Path(testbed.kubeconfig).read_text())
    user, cluster = cfg["users"][0]["user"], cfg["clusters"][0]["cluster"]

    def data(path):
        return base64.b64encode(Path(path).read_bytes()).decode()

    cfg["users"][0]["user"] = {
        "client-certificate-data": data(user["client-certificate"]),
        "client-key-data": data(user["client-key"]),
    }
    cfg["clusters"][0]["cluster"] = {
        "server": cluster["server"],
        "certificate-authority-data": data(cluster["certificate-authority"]),
    }
    return cfg


def module_processes(name):
    """PIDs of processes running the AnsiballZ wrapper of module ``name``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path("/proc/%s/cmdline" % pid).read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"AnsiballZ_%s.py" % name.encode()) for arg in cmdline) and b"python" in cmdline[0]:
            found.append(int(pid))
    return found


def files_holding(directory, needle):
    hits = []
    for base, _dirs, files in os.walk(directory):
        for f in files:
            path = os.path.join(base, f)
            try:
                if needle in Path(path).read_bytes():
                    hits.append(path)
            except OSError:
                continue
    return hits


def test_sigterm_mid_smoke_test_leaves_no_key_file_and_no_pod(testbed, tmp_path):
    kubeconfig = inline_admin_kubeconfig(testbed)
    key_pem = base64.b64decode(kubeconfig["users"][0]["user"]["client-key-data"])
    needle = key_pem.splitlines()[1]  # a line of the private key, as the library's temporary file holds it
    scratch, remote = tmp_path / "tmp", tmp_path / "remote-tmp"
    scratch.mkdir()
    remote.mkdir()
    task = {
        "gpuops.gpu_operator.gpu_smoke_test": {
            "kubeconfig": kubeconfig,
            "gpus": "64",  # more than any node has: the pods stay Pending until the schedule timeout
            "sample": 1,
            "schedule_timeout": 300,
            "timeout": 300,
            "pod_labels": {"gpuops.io/spec": "sigterm"},
        },
        "ignore_errors": True,
        "register": "smoke",
    }
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_REMOTE_TMP=str(remote),
        TMPDIR=str(scratch),
    )
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,", "-c", "local"]
    argv += ["-e", "ansible_python_interpreter=%s" % sys.executable, str(play)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    core = client.CoreV1Api(testbed.api_client())

    def pending_pod():
        pods = core.list_namespaced_pod("default", label_selector="gpuops.io/spec=sigterm").items
        return pods and module_processes("gpu_smoke_test")

    try:
        pids = wait_for(pending_pod, timeout=180, what="the smoke test's pod and its module process")
        assert files_holding(remote, needle), "the library wrote the client key into the module's directory"
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        output = proc.communicate(timeout=180)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted" in output, output[-3000:]
    assert files_holding(remote, needle) == [] and files_holding(scratch, needle) == []
    left = core.list_namespaced_pod("default", label_selector="gpuops.io/spec=sigterm").items
    assert [p.metadata.name for p in left if not p.metadata.deletion_timestamp] == []
