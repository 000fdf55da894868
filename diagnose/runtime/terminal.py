"""Text from the data made harmless to print on a terminal: :func:`terminal_safe`.

Every face that writes to a terminal uses it: the CLI's output (:func:`diagnose.cli.output.say`) and the progress
labels (:class:`diagnose.runtime.progress.Terminal`), which name files, models and collections the user gave.
"""

from __future__ import annotations

import re

#: the control characters a terminal acts on: C0 but tab and line feed, DEL, C1 (U+0080-U+009F, e.g. U+009B = CSI)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character a terminal would act on written as a visible escape (``ESC`` ->
    ``\\x1b``): bytes from the data (an id, a run line, a reference context) then can neither retitle the terminal
    (``ESC ] 0 ; ... BEL``), clear it (``ESC [ 2 J``) nor move its cursor (a carriage return). Tab and line feed stay.
    JSON output needs none of it: :func:`json.dumps` escapes every control character itself (``ensure_ascii``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
