"""`python -m diagnose` is the `diagnose` command."""

from __future__ import annotations

from diagnose.cli import entry

entry()
