"""Fixtures for gpu_operator and gpu_operator_install: the simulated GPU Operator and a clean slate per test module.

See operator_install_helpers.py for how the automation runs (ansible-playbook, least-privilege identity).
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest
from operator_install_helpers import PLAYBOOK, REPO_ROOT, Bed, wait_for

from tests.sim import testbed as tb


@pytest.fixture(scope="session")
def simulated_operator(testbed, tmp_path_factory):
    """The simulated GPU Operator: the bed's own when it runs one, else one started for this session."""
    st = tb.State(testbed.state_dir).load()
    if any(n == "gpu-operator-sim" and ok for n, _c, ok in st.check()):
        yield
        return
    work = tmp_path_factory.mktemp("operator-install-simop")
    with open(work / "gpu-operator-sim.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sim.operator", "--kubeconfig", testbed.kubeconfig, "--state-dir", str(work)],
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for((work / "dcgm-exporter.url").exists, 30, what="simulated operator start")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def bed(testbed, simulated_operator, tmp_path_factory):
    """A clean slate (no release, no operator CRDs) at the start and the end of each test module."""
    work = tmp_path_factory.mktemp("operator-install")
    link = work / "collections" / "ansible_collections" / "gpuops" / "gpu_operator"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_ROOT)
    # the role uses kubernetes.core (from the `ansible` package in this virtualenv)
    core = [Path(p) / "ansible_collections" / "kubernetes" / "core" for p in site.getsitepackages()][0]
    (link.parent.parent / "kubernetes").mkdir()
    (link.parent.parent / "kubernetes" / "core").symlink_to(core)
    (work / "play.yml").write_text(PLAYBOOK)
    b = Bed(testbed, work)
    b.clean_slate()
    try:
        yield b
    finally:
        b.clean_slate()
