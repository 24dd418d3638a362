"""The module_utils specs live in one directory per floor (``_core``, ``_clients``, ``_view``, ``_operator``,
``_workflows``, as plugins/module_utils); the fixtures they share (``audit_fixtures``, ``fleet_fixtures``,
``html_dom``) stay here, importable by name from every floor's directory."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
