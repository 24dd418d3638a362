# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Reading report files and writing a set of them atomically."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def read_text(path):
    """The UTF-8 text of ``path``; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (IOError, OSError, UnicodeDecodeError):
        return None


def write_atomic(files, mode=0o644):
    """Write ``{path: text}``: every file to a temporary file in its own directory first, then each renamed
    over its target (``os.replace``, atomic on POSIX). A reader sees the old file or the new one, never a part;
    if any temporary file cannot be written, no target is touched and the temporaries are removed."""
    temps = []
    try:
        for path, text in sorted(files.items()):
            directory = os.path.dirname(path) or "."
            fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _path in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
