"""The CLI's contract: status, idempotent up, one-line errors, down stops only its own processes."""

import os
import socket
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli
from tests.sim import testbed as tb


def _procs_mentioning(text: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return [p for p in found if p != os.getpid()]


def test_status_names_every_component(testbed):
    proc = testbed.cli("status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "chart-repo"):
        assert f"{name} " in proc.stdout and "running" in proc.stdout


def test_up_twice_is_safe(testbed):
    proc = testbed.cli("up", "--profile", testbed.profile)
    assert proc.returncode == 0, proc.stderr
    assert "already up" in proc.stderr


def test_unknown_profile_key_is_one_line(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\npools:\n  - name: a\n    count: 1\n    gpus: 8\n")
    proc = run_cli("up", "--profile", str(bad), "--state-dir", str(tmp_path / "st"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown key 'pools[0].gpus'" in lines[0]
    assert not (tmp_path / "st").exists()


def test_port_taken_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run_cli("up", "--profile", "ci", "--port", str(port), "--state-dir", str(tmp_path / "st"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port}" in lines[0] and "--port" in lines[0]


def test_missing_binary_is_one_line(tmp_path):
    env = {**os.environ, "GPUOPS_BIN": str(tmp_path / "nobin")}
    proc = run_cli("up", "--profile", "ci", "--state-dir", str(tmp_path / "st"), env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing binary etcd" in lines[0] and "make sim-binaries" in lines[0]


TINY = """\
name: tiny
pools:
  - name: g
    count: 1
    gpu: {product: Tesla-T4, count: 1, memory_mib: 15360}
"""


def test_failed_up_leaves_nothing_running(testbed, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = Path(testbed.helm).parent
    for name in tb.BINARIES:  # every real one but kwok
        if name != "kwok":
            (bindir / name).symlink_to(real / name)
    (bindir / "kwok").write_text("#!/bin/sh\necho 'kwok stand-in: failing on purpose' >&2\nexit 1\n")
    (bindir / "kwok").chmod(0o755)
    prof = tmp_path / "tiny.yml"
    prof.write_text(TINY)
    st = tmp_path / "st"
    proc = run_cli("up", "--profile", str(prof), "--state-dir", str(st), env={**os.environ, "GPUOPS_BIN": str(bindir)})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: kwok exited during start-up")
    assert _procs_mentioning(str(st)) == []
    assert not (st / "state.json").exists()


def test_up_then_down_leaves_no_process(testbed, tmp_path):
    prof = tmp_path / "tiny.yml"
    prof.write_text(TINY)
    st = tmp_path / "st"
    proc = run_cli("up", "--profile", str(prof), "--state-dir", str(st))
    assert proc.returncode == 0, proc.stderr
    assert len(_procs_mentioning(str(st))) >= 6
    proc = run_cli("down", "--state-dir", str(st))
    assert proc.returncode == 0, proc.stderr
    assert _procs_mentioning(str(st)) == []
    assert not st.exists()
    assert run_cli("status", "--state-dir", str(st)).returncode == 3


def test_status_names_crashed_component(testbed, tmp_path):
    """A crashed component is reported with its log file (faked by pointing a state entry at a dead PID)."""
    import json
    import shutil

    st = tmp_path / "st"
    st.mkdir()
    data = json.loads((Path(testbed.state_dir) / "state.json").read_text())
    data["components"] = {
        "kube-scheduler": {"pid": 2**22 + 1, "marker": "kube-scheduler", "log": "/tmp/kube-scheduler.log", "argv": []}
    }
    (st / "state.json").write_text(json.dumps(data))
    proc = run_cli("status", "--state-dir", str(st))
    assert proc.returncode == 1
    assert "kube-scheduler" in proc.stdout and "CRASHED" in proc.stdout and "/tmp/kube-scheduler.log" in proc.stdout
    shutil.rmtree(st)


@pytest.mark.parametrize("name", ["ci", "demo", "scale-1000"])
def test_shipped_profiles_validate(name):
    proc = run_cli("validate", name)
    assert proc.returncode == 0, proc.stderr
