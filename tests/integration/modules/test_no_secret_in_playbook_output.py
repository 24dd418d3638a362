"""Through ansible-playbook at -vvv, no module prints a secret of its kubeconfig, in any shape the option takes (a
mapping; the file's YAML text; OIDC auth-provider tokens, exec environment values and arguments), whatever fails:
the argument check (an unknown option, a wrong type), an input rule, or the cluster (nothing listens at the server);
nor when it succeeds, given the test bed's kubeconfig as text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
TOKEN, KEY_DATA, PASSWORD = "s3cr3t-t0ken-in-playbook", "S0VZLURBVEEtc2VjcmV0", "p4ssw0rd-in-playbook"
ID_TOKEN, REFRESH, CLIENT_SECRET, ENV_VALUE, ARG_VALUE = (
    "oidc-id-t0ken-in-playbook",
    "oidc-refresh-in-playbook",
    "oidc-client-secret-in-playbook",
    "exec-env-value-in-playbook",
    "exec-arg-secret-in-playbook",
)
SECRETS = (TOKEN, KEY_DATA, PASSWORD, ID_TOKEN, REFRESH, CLIENT_SECRET, ENV_VALUE, ARG_VALUE)
CLUSTER_MODULES = {
    "gpu_canary_upgrade": {"driver_version": "580.105.08"},
    "gpu_cluster_info": {},
    "gpu_operator": {"chart_ref": "gpu-operator", "chart_repo_url": "http://127.0.0.1:1/charts"},
    "gpu_preflight_info": {},
    "gpu_smoke_test": {},
    "gpu_triage_info": {"namespace": "default"},
    "gpu_validate_report": {"hosts": {}, "dest": "/nonexistent-gpuops/reports"},
}
BAD_INPUTS = {
    "unknown option": {"no_such_option": 1},
    "wrong type": {"api_timeout": "soon"},
    "an input rule": {"api_timeout": -1},
    "no server": {},
}


def kubeconfig(user):
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }


STATIC = kubeconfig({"token": TOKEN, "client-key-data": KEY_DATA, "password": PASSWORD})
OIDC = {
    "auth-provider": {
        "name": "oidc",
        "config": {"id-token": ID_TOKEN, "refresh-token": REFRESH, "client-secret": CLIENT_SECRET},
    }
}
EXEC = {"exec": {"command": "true", "env": [{"name": "X", "value": ENV_VALUE}], "args": ["--token", ARG_VALUE]}}
SHAPES = {
    "a mapping": STATIC,
    "YAML text": yaml.safe_dump(STATIC),
    "OIDC as YAML text": yaml.safe_dump(kubeconfig(OIDC)),
    "exec as a mapping": kubeconfig(EXEC),
}


#: The modules that get the OIDC and exec shapes too (gpu_operator hands its kubeconfig to helm as a file).
SAMPLED = ("gpu_cluster_info", "gpu_operator")


def playbook():
    tasks = []
    for module, args in sorted(CLUSTER_MODULES.items()):
        for shape, config in sorted(SHAPES.items()):
            for bad, extra in sorted(BAD_INPUTS.items()):
                if shape != "a mapping" and (bad != "no server" or shape != "YAML text" and module not in SAMPLED):
                    continue  # masking happens once, at argument load, for every module: other shapes are sampled
                tasks.append(
                    {
                        "name": "%s, kubeconfig as %s, with %s" % (module, shape, bad),
                        "gpuops.gpu_operator." + module: dict(dict(args, kubeconfig=config, api_timeout=2), **extra),
                        "ignore_errors": True,
                    }
                )
    unknown_context = {"kubeconfig": SHAPES["YAML text"], "context": "no-such-context", "api_timeout": 2}
    tasks.append({"name": "a context the text lacks", "gpuops.gpu_operator.gpu_cluster_info": unknown_context})
    tasks[-1]["ignore_errors"] = True
    return [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def run_playbook(tmp_path, plays, env_extra=None):
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        K8S_AUTH_KUBECONFIG="",
        KUBECONFIG="",
        **(env_extra or {}),
    )
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-vvv", "-i", "localhost,", "-c", "local"]
    argv += ["-e", "ansible_python_interpreter=%s" % sys.executable, str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)
    return proc, proc.stdout + proc.stderr


def test_no_secret_appears_at_vvv_and_every_bad_input_fails(tmp_path):
    plays = playbook()
    proc, output = run_playbook(tmp_path, plays)
    assert proc.returncode == 0, output[-3000:]
    assert output.count("...ignoring") == len(plays[0]["tasks"]), output[-3000:]
    assert "Traceback" not in output and "internal error" not in output
    for secret in SECRETS:
        assert secret not in output, secret
    assert "is not in kubeconfig (kubeconfig given as YAML text)" in output  # named by its kind, never shown


def test_a_run_that_succeeds_with_the_kubeconfig_as_text_shows_no_credential(testbed, tmp_path):
    text = Path(testbed.sa_kubeconfig).read_text()
    token = yaml.safe_load(text)["users"][0]["user"]["token"]
    task = {"gpuops.gpu_operator.gpu_cluster_info": {"kubeconfig": text}, "register": "info"}
    shown = {"ansible.builtin.debug": {"var": "info"}}
    proc, output = run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": [task, shown]}])
    assert proc.returncode == 0, output[-3000:]
    assert '"api_requests"' in output  # the registered result was shown in full
    assert token not in output and token[-24:] not in output
