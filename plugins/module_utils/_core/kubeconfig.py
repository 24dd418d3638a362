# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0

# This module_util is PRIVATE to the gpuops.gpu_operator collection. It may change
# incompatibly at any time, including in a patch release. Do not use it elsewhere.

"""The three shapes of the ``kubeconfig`` option, and every secret each can hold.

``kubeconfig`` is a path, a kubeconfig's YAML text (``"{{ lookup('file', 'admin.conf') }}"``) or a mapping. The text
and the mapping hold credentials: user tokens, passwords, client keys and certificates, an ``auth-provider``'s
tokens and client secret, ``exec`` environment values and secret-looking arguments. :func:`kubeconfig_secrets`
finds them all (for ``AnsibleModule.no_log_values``, which masks them in every output: ``msg``, ``invocation``,
results, warnings); :func:`describe` names a kubeconfig in a message without showing its text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.bounded_yaml import load_bounded
from ansible_collections.gpuops.gpu_operator.plugins.module_utils._core.errors import ArgumentError

#: Keys of a kubeconfig ``users[].user`` entry whose values are secrets.
SECRET_USER_KEYS = ("token", "password", "client-key-data", "client-certificate-data")
#: A key of an ``auth-provider`` config or an ``exec`` argument holding one of these words holds a secret.
SECRET_WORDS = ("token", "secret", "password", "passwd", "key", "credential")
#: A secret in kubeconfig text that cannot be parsed: ``key: value`` on one line, for a key of a secret.
_SECRET_LINE = re.compile(
    r"^\s*-?\s*[\"']?([A-Za-z_-]*(?:%s)[A-Za-z_-]*)[\"']?\s*:\s*[\"']?([^\s\"'#]+)" % "|".join(SECRET_WORDS),
    re.IGNORECASE | re.MULTILINE,
)
#: Shorter strings, and the YAML words for true, false and null, are never masked: every occurrence of a masked
#: string is replaced in all output, and masking ``1`` or ``true`` would garble it without hiding anything.
MIN_SECRET = 4
_NOT_SECRET = frozenset(("true", "false", "yes", "no", "null", "none"))
#: The most bytes of kubeconfig text read (a kubeconfig with many clusters is a few tens of kilobytes).
MAX_TEXT = 1024 * 1024


def is_text(raw):
    """Whether ``raw`` is a kubeconfig's text rather than a path: a string spanning lines or a flow mapping."""
    return isinstance(raw, str) and ("\n" in raw or raw.lstrip().startswith("{"))


def describe(raw):
    """How a message names ``raw``: the path, or the kind of inline kubeconfig, never its content."""
    if isinstance(raw, dict):
        return "(inline kubeconfig mapping)"
    if is_text(raw):
        return "(kubeconfig given as YAML text)"
    return repr(raw)


def parse_text(raw):
    """The mapping of kubeconfig text; :class:`ArgumentError` (without the text) when it is not one."""
    data = load_bounded(raw, "the kubeconfig given as YAML text", max_bytes=MAX_TEXT)
    if not isinstance(data, dict):
        raise ArgumentError(
            "the kubeconfig given as YAML text is not a kubeconfig (expected a mapping with clusters, users and "
            "contexts); pass the file's content, its path, or a mapping"
        )
    return data


def _secret_key(key):
    return any(word in str(key).lower() for word in SECRET_WORDS)


def _user_secrets(user):
    found = [user[k] for k in SECRET_USER_KEYS if user.get(k)]
    provider = user.get("auth-provider")
    config = provider.get("config") if isinstance(provider, dict) else None
    if isinstance(config, dict):
        found.extend(v for k, v in config.items() if v and _secret_key(k))
    exe = user.get("exec")
    if isinstance(exe, dict):
        for env in exe.get("env") or []:
            if isinstance(env, dict) and env.get("value"):
                found.append(env["value"])
        args = [a for a in exe.get("args") or [] if isinstance(a, str)]
        for index, arg in enumerate(args):
            name, eq, value = arg.partition("=")
            if eq and value and _secret_key(name):
                found.append(value)
            elif not eq and _secret_key(arg) and arg.startswith("-") and index + 1 < len(args):
                found.append(args[index + 1])
    return found


def _mapping_secrets(data):
    found = []
    users = data.get("users")
    for entry in users if isinstance(users, list) else []:
        user = entry.get("user") if isinstance(entry, dict) else None
        if isinstance(user, dict):
            found.extend(_user_secrets(user))
    return found


def kubeconfig_secrets(raw):
    """Every secret string of ``raw`` (a mapping or YAML text; a path holds none), for ``no_log_values``.

    Text is a secret as a whole; what it holds is found by parsing it, or line by line when it cannot be parsed.
    """
    if isinstance(raw, dict):
        found = _mapping_secrets(raw)
    elif is_text(raw):
        found = [raw] + [m.group(2) for m in _SECRET_LINE.finditer(raw)]
        try:
            found.extend(_mapping_secrets(parse_text(raw)))
        except ArgumentError:
            pass
    else:
        return set()
    return {
        s for s in (str(v) for v in found if v is not None) if len(s) >= MIN_SECRET and s.lower() not in _NOT_SECRET
    }
