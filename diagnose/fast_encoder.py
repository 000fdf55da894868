"""Moved to :mod:`diagnose.embed.fast`; this name is the same module object (so ``monkeypatch.setattr`` on it
patches what :func:`diagnose.embed.load_encoder` uses)."""

import sys

from diagnose.embed import fast

sys.modules[__name__] = fast
