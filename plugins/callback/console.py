# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: console
type: stdout
short_description: A quiet console for the collection's playbooks - messages as plain lines, one line per wait
version_added: 0.1.0
author: gpuops.gpu_operator contributors (@gpuops)
description:
  - The default callback's output with four changes made for the collection's playbooks in a terminal, in CI and
    in AWX's job output.
  - "Messages: the C(msg) of an M(ansible.builtin.debug) task (the validation summary, the baseline findings, the
    canary's status) prints as plain lines, one per list item, whatever O(display_ok_hosts) says - never as an
    escaped JSON list."
  - "Waits: in a loop whose item labels start with the seconds since the wait began (C(20 s: 5/6 GPU nodes ready;
    ...), as P(gpuops.gpu_operator.fleet_wait_line#filter) writes them), a label that says the same as the one
    before is not printed again; on a terminal the wait's line is rewritten in place, elsewhere (CI, AWX) a new
    line comes only when what it says changes, and the wait's last line always closes it."
  - "Quiet by default: results that are only ok or skipped are not printed (their task banners neither); set
    E(ANSIBLE_DISPLAY_OK_HOSTS=true) or E(ANSIBLE_DISPLAY_SKIPPED_HOSTS=true) to see them. Changes, failures,
    messages, waits and the recap are always printed."
  - "Banners are one line (no blank line before), and a failed M(ansible.builtin.fail) or M(ansible.builtin.assert)
    prints its message as a plain line."
  - "Use it with E(ANSIBLE_STDOUT_CALLBACK=gpuops.gpu_operator.console) or C(stdout_callback) in the C([defaults])
    section of C(ansible.cfg); AWX and ansible-runner wrap the configured stdout callback, so the job output shows
    the same lines."
extends_documentation_fragment:
  - default_callback
  - result_format_callback
options:
  display_ok_hosts:
    name: Show 'ok' hosts
    description:
      - Print task results that are only ok (and their task banners). Off by default, unlike the default callback;
        messages and waits are printed either way.
    type: bool
    default: false
    env:
      - name: ANSIBLE_DISPLAY_OK_HOSTS
    ini:
      - key: display_ok_hosts
        section: defaults
  display_skipped_hosts:
    name: Show skipped hosts
    description:
      - Print skipped task results (and their task banners). Off by default, unlike the default callback.
    type: bool
    default: false
    env:
      - name: ANSIBLE_DISPLAY_SKIPPED_HOSTS
    ini:
      - key: display_skipped_hosts
        section: defaults
requirements:
  - set as the stdout callback in configuration
"""

import re
import sys

from ansible import constants as C
from ansible.playbook.task_include import TaskInclude
from ansible.plugins.callback.default import CallbackModule as DefaultCallback
from ansible.utils.fqcn import add_internal_fqcns

#: The actions whose msg is a message for the reader.
MESSAGE_ACTIONS = frozenset(add_internal_fqcns(("debug",)))
#: The actions whose failure is its msg.
FAIL_ACTIONS = frozenset(add_internal_fqcns(("fail", "assert")))
#: A wait's item label: the seconds since the wait began, then what it waits for.
PROGRESS = re.compile(r"^(\d+) s: (.*)$", re.S)


def message_lines(msg):
    """A debug msg as plain lines: one per list item (each item's own lines kept), a string's lines, other values
    as their text."""
    items = msg if isinstance(msg, (list, tuple)) else [msg]
    lines = []
    for item in items:
        lines.extend(("%s" % item).splitlines() or [""])
    return lines


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "gpuops.gpu_operator.console"

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._wait = None  # the open wait: {"task", "said", "line", "shown"}
        self._message_hosts = {}  # task uuid -> hosts whose message was printed
        self._rewrite = sys.stdout.isatty()

    # --- banners: one line each ----------------------------------------------------------------------------
    def _banner(self, text):
        self._close_wait()
        self._display.display("%s %s" % (text, "*" * max(3, 79 - len(text))), color=C.COLOR_HIGHLIGHT)

    def v2_playbook_on_play_start(self, play):
        self._play = play
        marker = " [CHECK MODE]" if play.check_mode and self.get_option("check_mode_markers") else ""
        name = play.get_name().strip()
        self._banner(("PLAY [%s]" % name if name else "PLAY") + marker)

    def _print_task_banner(self, task):
        prefix = self._task_type_cache.get(task._uuid, "TASK")
        name = self._last_task_name if self._last_task_name is not None else task.get_name().strip()
        marker = " [CHECK MODE]" if task.check_mode and self.get_option("check_mode_markers") else ""
        self._banner("%s [%s]%s" % (prefix, name, marker))
        if self._display.verbosity >= 2:
            self._print_task_path(task)
        self._last_task_banner = task._uuid

    def _ensure_banner(self, task):
        if self._last_task_banner != task._uuid:
            self._print_task_banner(task)

    # --- messages --------------------------------------------------------------------------------------------
    def v2_runner_on_ok(self, result):
        self._close_wait(result.task)
        if result.task.action in MESSAGE_ACTIONS and "msg" in result.result and not result.task.loop:
            self._print_message(result)
            return
        if isinstance(result.task, TaskInclude) and not self.get_option("display_ok_hosts"):
            return  # an include is only ok: its tasks print their own banners when they have something to say
        super(CallbackModule, self).v2_runner_on_ok(result)

    def _print_message(self, result):
        self._ensure_banner(result.task)
        self._handle_warnings_and_exception(result)
        hosts = self._message_hosts.setdefault(result.task._uuid, [])
        if hosts:  # a second host's message: say whose it is
            self._display.display("[%s]" % self.host_label(result), color=C.COLOR_OK)
        hosts.append(result.host.get_name())
        for line in message_lines(result.result["msg"]):
            self._display.display(line)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._close_wait(result.task)
        msg = result.result.get("msg")
        if result.task.action in FAIL_ACTIONS and isinstance(msg, str) and not result.task.loop:
            self._ensure_banner(result.task)
            self._handle_warnings(result.result)
            if self._display.verbosity < 3:  # the failure is its msg; its origin and trace only at -vvv
                result.result.pop("exception", None)
            self._handle_exception(result.result, use_stderr=self.get_option("display_failed_stderr"))
            stderr = self.get_option("display_failed_stderr")
            self._display.display("fatal: [%s]: %s" % (self.host_label(result), msg), C.COLOR_ERROR, stderr=stderr)
            if ignore_errors:
                self._display.display("...ignoring", color=C.COLOR_SKIP)
            return
        super(CallbackModule, self).v2_runner_on_failed(result, ignore_errors)

    # --- waits -----------------------------------------------------------------------------------------------
    def v2_runner_item_on_ok(self, result):
        match = PROGRESS.match("%s" % self._get_item_label(result.result))
        if not match or result.result.get("changed"):
            self._close_wait()
            super(CallbackModule, self).v2_runner_item_on_ok(result)
            return
        said, line = match.group(2), match.group(0)
        wait = self._wait
        if wait is None or wait["task"] != result.task._uuid:
            self._close_wait()
            self._ensure_banner(result.task)
            wait = self._wait = {"task": result.task._uuid, "said": None, "line": None, "shown": True}
        if said != wait["said"] or self._rewrite:
            self._show_progress(line, first=wait["said"] is None)
            wait["shown"] = True
        else:
            wait["shown"] = False
        wait["said"], wait["line"] = said, line

    def _show_progress(self, line, first):
        if self._rewrite:  # a terminal: the same line, rewritten
            self._display.display(("" if first else "\r\x1b[K") + line, newline=False)
        else:
            self._display.display(line)

    def _close_wait(self, task=None):
        """End the open wait (of ``task`` only, when given): print its last line when it was folded."""
        wait = self._wait
        if wait is None or (task is not None and wait["task"] != task._uuid):
            return
        self._wait = None
        if self._rewrite:
            self._display.display("")
        elif not wait["shown"]:
            self._display.display(wait["line"])

    def v2_runner_item_on_failed(self, result):
        self._close_wait()
        super(CallbackModule, self).v2_runner_item_on_failed(result)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close_wait()
        super(CallbackModule, self).v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_include(self, included_file):
        if self.get_option("display_ok_hosts"):
            super(CallbackModule, self).v2_playbook_on_include(included_file)

    def v2_playbook_on_stats(self, stats):
        self._close_wait()
        super(CallbackModule, self).v2_playbook_on_stats(stats)
