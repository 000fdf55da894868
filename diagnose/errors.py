"""The one error a user can cause: :class:`DataError`. It sits below every other module (the records of
:mod:`diagnose.data` raise it, and so do the machinery of :mod:`diagnose.runtime` and the checks of
:mod:`diagnose.checks`); ``diagnose.DataError`` and ``diagnose.data.DataError`` are this class."""

from __future__ import annotations


class DataError(Exception):
    """A user mistake in the input that stops the work. The message is shown as is (no traceback).

    ``param``: the library parameter at fault (``"k"``, ``"corpus"``, ...), when one is; the CLI names its flag
    for it and the app its widget, so library messages speak of parameters, never of flags."""

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param
