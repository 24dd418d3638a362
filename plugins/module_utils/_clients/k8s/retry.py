# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""Bounded retries of API requests: which statuses are retried, and how long to wait before the next try."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import time

#: HTTP statuses that are retried: throttling and server-side failures.
RETRY_STATUSES = frozenset((429, 500, 502, 503, 504))


class RetryPolicy:
    """Bounded retries: ``attempts`` tries in all, delays ``base * 2**n`` capped at ``max_delay`` with full jitter.

    A ``Retry-After`` header (seconds) is honoured, capped at ``max_delay``. ``sleep``/``rand`` are injectable
    so tests run instantly and deterministically.
    """

    def __init__(self, attempts=5, base_delay=0.25, max_delay=8.0, sleep=time.sleep, rand=random.random):
        self.attempts = max(1, int(attempts))
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self.sleep = sleep
        self.rand = rand

    def delay(self, attempt, retry_after=None):
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_delay)
            except (TypeError, ValueError):
                pass  # an HTTP date or garbage: fall back to backoff
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return ceiling * self.rand()
