"""The console callback (gpuops.gpu_operator.console) through a real ansible-playbook run on localhost (no cluster):
a debug message prints as plain lines even with ANSIBLE_DISPLAY_OK_HOSTS=false, a wait prints a line only when what
it says changes (and always its last), ok and skipped results stay quiet unless asked for, and a fail task's message
is one plain line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]

PLAYBOOK = """
- name: Console spec
  hosts: localhost
  gather_facts: false
  tasks:
    - name: An include (only ok)
      ansible.builtin.include_tasks: included.yml
    - name: A skipped task
      ansible.builtin.debug:
        msg: never
      when: false
    - name: A task that is only ok
      ansible.builtin.command: "true"
      changed_when: false
    - name: Wait for the nodes
      ansible.builtin.command: "true"
      changed_when: false
      loop: [0, 1, 2, 3, 4, 5]
      loop_control:
        label: "{{ item * 10 }} s: {{ '3/6 GPU nodes ready' if item < 2 else ('5/6 GPU nodes ready' if item < 4
                   else '6/6 GPU nodes ready') }}"
    - name: Print the summary
      ansible.builtin.debug:
        msg:
          - "GPU validation: 5 passed, 1 failed of 6 GPU nodes"
          - "FAIL a100-1 (pool a100) at toolkit: \\"nvidia\\" runtime missing"
          - "  run: kubectl describe node a100-1"
    - name: Fail as the policy says
      ansible.builtin.fail:
        msg: "1 GPU node fails: a100-1 at toolkit"
"""


def play(tmp_path, **env):
    book = tmp_path / "console.yml"
    book.write_text(PLAYBOOK)
    (tmp_path / "included.yml").write_text('- name: Included\n  ansible.builtin.command: "true"\n  changed_when: no\n')
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_DISPLAY_")}
    environ.update(
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_STDOUT_CALLBACK="gpuops.gpu_operator.console",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_NOCOLOR="true",
        **env,
    )
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    proc = subprocess.run(
        [str(ansible_playbook), str(book)], capture_output=True, text=True, env=environ, timeout=120, check=False
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("ok_hosts", ["false", "true"])
def test_the_summary_prints_as_plain_lines_whatever_display_ok_hosts_says(tmp_path, ok_hosts):
    lines = play(tmp_path, ANSIBLE_DISPLAY_OK_HOSTS=ok_hosts)
    start = lines.index("GPU validation: 5 passed, 1 failed of 6 GPU nodes")
    assert lines[start + 1 : start + 3] == [
        'FAIL a100-1 (pool a100) at toolkit: "nvidia" runtime missing',
        "  run: kubectl describe node a100-1",
    ]
    assert lines[start - 1].startswith("TASK [Print the summary] ***")
    assert not any(line.lstrip().startswith(('"', "[", "{", "ok: [localhost] =>")) for line in lines), lines


def test_a_wait_prints_a_line_only_when_what_it_says_changes_and_always_its_last(tmp_path):
    lines = play(tmp_path)
    assert [line for line in lines if " s: " in line] == [
        "0 s: 3/6 GPU nodes ready",
        "20 s: 5/6 GPU nodes ready",
        "40 s: 6/6 GPU nodes ready",
        "50 s: 6/6 GPU nodes ready",
    ]
    assert lines[lines.index("0 s: 3/6 GPU nodes ready") - 1].startswith("TASK [Wait for the nodes] ***")


def test_ok_and_skipped_results_are_quiet_unless_asked_for(tmp_path):
    quiet = play(tmp_path)
    assert not [line for line in quiet if "A skipped task" in line or "only ok" in line or "skipping" in line]
    assert not [line for line in quiet if "include" in line.lower()], quiet
    assert len(quiet) <= 16, "\n".join(quiet)
    loud = play(tmp_path, ANSIBLE_DISPLAY_OK_HOSTS="true", ANSIBLE_DISPLAY_SKIPPED_HOSTS="true")
    assert any(line.startswith("TASK [A skipped task]") for line in loud)
    assert "ok: [localhost]" in loud and "skipping: [localhost]" in loud


def test_a_failing_policy_is_one_plain_line(tmp_path):
    lines = play(tmp_path)
    assert "fatal: [localhost]: 1 GPU node fails: a100-1 at toolkit" in lines
    assert not any(line.startswith(("[ERROR]", "Origin:")) for line in lines), lines
    assert any(line.startswith("localhost ") and "failed=1" in line for line in lines)
