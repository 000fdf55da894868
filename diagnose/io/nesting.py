"""How deep a JSON line may nest arrays and objects, checked by a byte scan before any parser sees the line.

pyarrow's JSON reader recurses once per level in C and overflows its stack between 10,000 and 20,000 levels: the
process dies with SIGSEGV, no message, no traceback (a 40 KB line of ``[`` is enough to take a shared app down).
Python's ``json`` module raises ``RecursionError`` near 1,000 levels, and the flattening of nested objects after it
recurses too. Real records nest a few levels, so :data:`MAX_JSON_DEPTH` is far below every one of those limits.

:func:`check_json_depth` scans a whole file: a line is looked at closely only when it holds more than
``MAX_JSON_DEPTH`` opening brackets, and its exact depth (:func:`json_depth`) ignores brackets inside strings.
"""

from __future__ import annotations

import re

import numpy as np

from diagnose.io.messages import fatal_error

#: The deepest nesting of arrays and objects accepted in one JSON line (``{"a": [1]}`` is 2 deep).
MAX_JSON_DEPTH = 100

_PIECE = 1 << 24  # bytes scanned at a time (ending at a line end): numpy temporaries of a few times this
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*+"', re.S)
_OPEN, _CLOSE = (ord("["), ord("{")), (ord("]"), ord("}"))
_NOT_BRACKET_OR_EOL = bytes(b for b in range(256) if b not in b"[{\n")


def json_depth(line: bytes) -> int:
    """How deep ``line`` nests arrays and objects; brackets inside JSON strings do not count."""
    bare = _STRING.sub(b"", line)
    depth = top = 0
    for at in range(0, len(bare), _PIECE):
        a = np.frombuffer(bare, dtype=np.uint8, count=min(_PIECE, len(bare) - at), offset=at)
        step = ((a == _OPEN[0]) | (a == _OPEN[1])).astype(np.int8) - ((a == _CLOSE[0]) | (a == _CLOSE[1]))
        levels = np.cumsum(step, dtype=np.int64) + depth
        if len(levels):
            top, depth = max(top, int(levels.max())), int(levels[-1])
    return top


def check_json_depth(raw: bytes, file: str, expected: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse ``raw`` (a JSONL file) when a line nests deeper than ``limit``: a DataError naming the file, the line
    and the depth, raised before pyarrow or ``json`` parse anything.

    One pass in C: ``bytes.translate`` keeps only the opening brackets and the line ends, so a line with more than
    ``limit`` opening brackets is a run of more than ``limit`` bracket characters (a regex finds it); only such a
    line is measured exactly (:func:`json_depth`). About a fifth of the time pyarrow takes to parse the file."""
    pos, lineno, n = 0, 1, len(raw)
    run = re.compile(rb"[\[{]{%d}" % (limit + 1))
    while pos < n:
        end = raw.find(b"\n", min(pos + _PIECE, n))
        end = n if end < 0 else end + 1
        kept = raw[pos:end].translate(None, _NOT_BRACKET_OR_EOL)
        at = 0
        while (m := run.search(kept, at)) is not None:
            line = lineno + kept.count(b"\n", 0, m.start())
            start = _line_offset(raw, pos, end, kept.count(b"\n", 0, m.start()))
            stop = raw.find(b"\n", start, end)
            stop = end if stop < 0 else stop
            depth = json_depth(raw[start:stop])
            if depth > limit:
                raise fatal_error(
                    file,
                    line,
                    f"JSON nested {depth:,} levels deep, more than the {limit} this reader accepts",
                    f"the line is {stop - start:,} bytes",
                    expected,
                    f"flatten the record (at most {limit} levels of arrays and objects)",
                )
            nl = kept.find(b"\n", m.end())  # brackets inside strings: the line is fine, look further
            at = len(kept) if nl < 0 else nl
        lineno += kept.count(b"\n")
        pos = end


def _line_offset(raw: bytes, pos: int, end: int, skip: int) -> int:
    """Byte offset of the line ``skip`` lines after offset ``pos`` (a line start), before ``end``."""
    if skip == 0:
        return pos
    newlines = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8, count=end - pos, offset=pos) == ord("\n"))
    return pos + int(newlines[skip - 1]) + 1
