# Copyright (c) gpuops.gpu_operator contributors
# SPDX-License-Identifier: Apache-2.0
"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test (``--venv``/``--local``) puts pip into each per-test virtualenv by running
``~/.ansible/test/cache/get_pip_<version>.py`` and downloads that script from an Ansible-hosted URL when
it is missing. `make sanity` copies this file there instead (docs/DEVELOPING.md, test-bed.md section 10).

Run by the new virtualenv's interpreter with get-pip's arguments (for example
``--disable-pip-version-check pip==24.2 --no-setuptools --no-wheel``), it:

1. bootstraps pip from the interpreter's bundled ``ensurepip`` wheel (no network);
2. runs ``python -m pip install`` with the same arguments minus ``--no-setuptools`` and ``--no-wheel``
   (get-pip options that pip rejects), so pip ends at the version ansible-test pinned, from the package
   index pip is configured for.
"""

from __future__ import annotations

import subprocess
import sys

GET_PIP_ONLY = frozenset({"--no-setuptools", "--no-wheel"})


def main() -> int:
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True, stdout=subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
