# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Text helpers shared by the reports and messages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


def md_cell(value, empty="-"):
    """``value`` as one Markdown table cell: ``empty`` for None, pipes escaped, newlines folded."""
    return str(empty if value is None else value).replace("|", "\\|").replace("\n", " ")


def md_table(headers, rows):
    """A Markdown table (list of lines) from ``headers`` and ``rows`` of cell values."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _h in headers) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def natural_key(name):
    """Sort key of a name in natural order: ``a100-2`` before ``a100-10`` (numbers compare as numbers)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(name or ""))]
