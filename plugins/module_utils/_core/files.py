# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Reading report files, and writing a set of them through ``AnsibleModule.atomic_move``."""

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


def write_files(module, files):
    """Write ``{path: text}``: every text to a file in the module's temporary directory first, then each moved over
    its target with ``module.atomic_move`` (a rename, or a copy and rename across file systems). A new file gets
    the permissions the umask allows (0666 less the umask, as ``atomic_move`` sets them); a file replaced keeps its
    own. A reader sees the old file or the new one, never a part; if any text cannot be staged, no target is
    touched (the module removes its temporary directory when it exits)."""
    staged = []
    for path, text in sorted(files.items()):
        fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=module.tmpdir)
        staged.append((tmp, path))
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
    for tmp, path in staged:
        module.atomic_move(tmp, path)


def write_stale(module, dest, files):
    """Write each ``{path: text}`` whose file holds another text (none in the module's check mode), making the
    directory ``dest`` first; returns ``(current, stale)``: each path's text before (None: no file) and the
    ``{path: text}`` that differed."""
    current = {path: read_text(path) for path in files}
    stale = {path: text for path, text in files.items() if current[path] != text}
    if stale and not module.check_mode:
        if not os.path.isdir(dest):
            os.makedirs(dest, 0o777)  # less the umask, as mkdir -p
        write_files(module, stale)
    return current, stale
