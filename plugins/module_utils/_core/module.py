# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The module runner: every module's ``main()`` is one call to :func:`run_module`.

:func:`run_module` builds the module (a :class:`GpuOpsModule`, which masks an inline kubeconfig's secrets before
Ansible checks the arguments, so that no failure can print them), fails with ``missing_required_lib`` for a
missing Python library, checks every option against its rule (``_core.inputs``) before anything is read or
written, runs ``execute(module)`` and exits with the dict it returns. A :class:`GpuOpsError` becomes ``fail_json``
through :func:`fail_from_exception`; nothing ends in a traceback.

Credentials never outlive the module: temporary files (the kubernetes library's client key and certificate, helm's
kubeconfig) go to the module's own temporary directory, which Ansible removes at exit, and SIGTERM or SIGHUP (a
task timeout, a closed terminal) end the module as SIGINT does, through that exit, instead of killing it on the spot.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import signal
import tempfile

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.inputs import check_inputs
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.kubeconfig import kubeconfig_secrets

#: Signals that end a module through its normal exit (cleanup included), as SIGINT's KeyboardInterrupt does.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Requirement:
    """A Python library a module needs: its PyPI name, whether it imported, and the import error's traceback."""

    def __init__(self, name, present, import_error=None):
        self.name = name
        self.present = present
        self.import_error = import_error


class GpuOpsModule(AnsibleModule):
    """An ``AnsibleModule`` that marks the secrets of an inline ``kubeconfig`` (a mapping or YAML text) ``no_log``
    as soon as the arguments are loaded, before the argument spec is checked (an unknown option or a wrong type
    fails inside ``AnsibleModule.__init__``, and its ``invocation.module_args`` must not show a token or key)."""

    def _load_params(self):
        super()._load_params()
        raw = self.params.get("kubeconfig") if isinstance(self.params, dict) else None
        self.no_log_values.update(kubeconfig_secrets(raw))


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run_module(argument_spec, execute, requirements=(), **module_kwargs):
    """Run one module: build it from ``argument_spec`` (plus ``module_kwargs`` such as ``required_if``), check
    ``requirements`` (:class:`Requirement`) and every option's rule, call ``execute(module)`` and ``exit_json``
    with its result dict."""
    module = GpuOpsModule(argument_spec=argument_spec, **module_kwargs)
    for req in requirements:
        if not req.present:
            module.fail_json(msg=missing_required_lib(req.name), exception=req.import_error)
    previous = {sig: signal.signal(sig, _interrupt) for sig in ENDING_SIGNALS}
    system_tempdir, tempfile.tempdir = tempfile.tempdir, module.tmpdir
    try:
        check_inputs(module.params, argument_spec)
        result = execute(module)
    except KeyboardInterrupt as exc:
        module.fail_json(
            msg="interrupted (%s) before the task finished; its temporary files were removed. Run the task again to "
            "see what the interruption left and finish it" % (exc or "SIGINT")
        )
    except Exception as exc:  # every failure is reported through fail_json, never as a traceback
        fail_from_exception(module, exc)
    finally:
        tempfile.tempdir = system_tempdir
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    module.exit_json(**result)
