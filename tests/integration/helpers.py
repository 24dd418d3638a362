"""Small helpers every integration test directory uses (import as ``tests.integration.helpers``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path


def wait_for(pred, timeout=30.0, interval=0.5, what="condition"):
    """Call ``pred`` every ``interval`` seconds until it returns something truthy, and return that; after
    ``timeout`` seconds fail the test naming ``what`` and the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# --- running one module through ansible-playbook --------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]

MODULE_PLAY = """
- name: Run {module}
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run {module}
      gpuops.gpu_operator.{module}: "{{{{ module_args }}}}"
      register: result
      ignore_errors: true
    - name: Save the result
      ansible.builtin.copy:
        content: "{{{{ result | to_json }}}}"
        dest: "{{{{ out }}}}"
        mode: "0600"
      check_mode: false
"""


def rolled_out(ds) -> bool:
    """A DaemonSet (kubernetes client object) runs its latest pod template, ready, on every node it wants."""
    st = ds.status
    if st.observed_generation != ds.metadata.generation:
        return False
    return st.desired_number_scheduled == (st.updated_number_scheduled or 0) == (st.number_ready or 0)


def collection_env(base):
    """Environment for ansible-playbook with ``base``/collections holding this checkout (the link is made here)
    and no kubeconfig from the caller's environment (K8S_AUTH_KUBECONFIG, KUBECONFIG)."""
    link = base / "collections" / "ansible_collections" / "gpuops" / "gpu_operator"
    if not link.exists():
        link.parent.mkdir(parents=True)
        link.symlink_to(REPO_ROOT)
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(base / "collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOME=str(base / "ansible-home"),
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
    )
    env.pop("K8S_AUTH_KUBECONFIG", None)
    env.pop("KUBECONFIG", None)
    return env


def module_runner(testbed, base, module):
    """``run(check=False, **module_args)`` -> the registered result of ``gpuops.gpu_operator.<module>``, run by
    ansible-playbook on localhost as the least-privilege identity (``kubeconfig`` defaults to
    testbed.sa_kubeconfig). A failed module comes back as its result (``failed``, ``msg``)."""
    env = collection_env(base)
    playbook = base / ("%s.yml" % module)
    playbook.write_text(MODULE_PLAY.format(module=module))
    ansible_playbook = str(Path(sys.executable).parent / "ansible-playbook")

    def run(check=False, **module_args):
        module_args.setdefault("kubeconfig", testbed.sa_kubeconfig)
        out = base / ("result-%s.json" % uuid.uuid4().hex[:8])
        extra = {"module_args": module_args, "out": str(out), "ansible_python_interpreter": sys.executable}
        cmd = [ansible_playbook, "-i", "localhost,", "-c", "local", str(playbook), "-e", json.dumps(extra)]
        if check:
            cmd.append("--check")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return json.loads(out.read_text())

    return run


# --- a real browser ---------------------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"


def chromium(*args, tmp):
    """Run Debian's headless Chromium (`make chromium`) with ``args`` and a profile in ``tmp``, with every host name
    mapped away (a report must need no network); the finished process (``--dump-dom`` output in ``stdout``)."""
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: run `make chromium` (apt-get install chromium)"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={tmp}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def bed_inventory(state_dir, dest: Path) -> Path:
    """The test bed's inventory (``python -m tests.sim inventory``) written to ``dest``."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.sim", "inventory", "--state-dir", str(state_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    dest.write_text(proc.stdout)
    return dest


def run_playbook(inventory, playbook, extra, env, *options, timeout=900):
    """``ansible-playbook -i inventory playbook -e extra [options]`` from the checkout; the finished process."""
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            str(playbook),
            "-e",
            json.dumps(extra),
            *options,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
