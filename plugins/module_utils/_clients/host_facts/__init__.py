# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""GPU host facts read from files under a host root, one file per source family; runs no commands.

:func:`facts.collect` is the entry point and :func:`facts.check_host_root` the check of the root; :mod:`reader`
gives file access that records a missing, unreadable, malformed or dangling source as a problem instead of raising
and tells absent (a "no") from unknown; :mod:`kernel`, :mod:`modprobe`, :mod:`system`, :mod:`pci`,
:mod:`container_runtime` (with the config summaries of :mod:`runtime_configs`) and :mod:`nvidia_stack` hold the
readers and their parsers.
"""
