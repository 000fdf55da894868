"""`python -m diagnose` is the `diagnose` command."""

from __future__ import annotations

import sys

from diagnose.cli import main

sys.exit(main())
