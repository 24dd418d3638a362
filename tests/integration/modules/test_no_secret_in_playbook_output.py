"""Through ansible-playbook at -vvv, no module prints a secret of an inline kubeconfig, whatever fails: the argument
check (an unknown option, a wrong type) or the cluster (nothing listens at the server)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
TOKEN, KEY_DATA, PASSWORD = "s3cr3t-t0ken-in-playbook", "S0VZLURBVEEtc2VjcmV0", "p4ssw0rd-in-playbook"
CLUSTER_MODULES = {
    "gpu_canary_upgrade": {"driver_version": "580.105.08"},
    "gpu_cluster_info": {},
    "gpu_operator": {"chart_ref": "gpu-operator", "chart_repo_url": "http://127.0.0.1:1/charts"},
    "gpu_preflight_info": {},
    "gpu_smoke_test": {},
    "gpu_triage_info": {"namespace": "default"},
    "gpu_validate_report": {"hosts": {}, "dest": "/nonexistent-gpuops/reports"},
}
BAD_INPUTS = {"unknown option": {"no_such_option": 1}, "wrong type": {"api_timeout": "soon"}, "no server": {}}


def playbook():
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": TOKEN, "client-key-data": KEY_DATA, "password": PASSWORD}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    tasks = []
    for module, args in sorted(CLUSTER_MODULES.items()):
        for bad, extra in sorted(BAD_INPUTS.items()):
            tasks.append(
                {
                    "name": "%s with %s" % (module, bad),
                    "gpuops.gpu_operator." + module: dict(dict(args, kubeconfig=kubeconfig, api_timeout=2), **extra),
                    "ignore_errors": True,
                    "register": "outcome",
                }
            )
            tasks.append({"name": "record", "ansible.builtin.set_fact": {"failures": "{{ failures + [outcome] }}"}})
    return [{"hosts": "localhost", "gather_facts": False, "vars": {"failures": []}, "tasks": tasks}]


def test_no_secret_appears_at_vvv_and_every_bad_input_fails(tmp_path):
    path = tmp_path / "bad-inputs.yml"
    path.write_text(yaml.safe_dump(playbook(), sort_keys=False))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        K8S_AUTH_KUBECONFIG="",
        KUBECONFIG="",
    )
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible-playbook")),
            "-vvv",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            "ansible_python_interpreter=%s" % sys.executable,
            str(path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    failed = output.count("...ignoring")
    assert failed == len(CLUSTER_MODULES) * len(BAD_INPUTS), output[-3000:]
    assert "Traceback" not in output
    for secret in (TOKEN, KEY_DATA, PASSWORD):
        assert secret not in output
