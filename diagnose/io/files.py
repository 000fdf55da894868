"""Reading an input file safely: the path checks (missing, a folder, a FIFO or device, no permission, outside the
folders reads are confined to), the size limit (``DIAGNOSE_MAX_INPUT_BYTES``, also for a gzip file once
decompressed), and the whole file as bytes (or, for a large plain file, a memory map of it)."""

from __future__ import annotations

import codecs
import contextvars
import errno
import gzip
import io as stdio
import mmap
import os
import re
import stat
import zlib
from pathlib import Path

from diagnose.data import DataError
from diagnose.io.messages import fatal_error, plural_of
from diagnose.runtime.memory import out_of_memory

PathLike = str | Path


class MappedFile(mmap.mmap):
    """A read-only memory map of a file (:func:`read_mapped`) whose ``in`` finds a byte string like ``bytes``' does
    (a plain map's ``in`` walks it byte by byte in Python, and finds single bytes only). ``stamp``: the file's size
    and modification time (ns) when it was mapped (:func:`check_unchanged`)."""

    stamp: tuple[int, int] | None = None

    def __contains__(self, needle: object) -> bool:
        if isinstance(needle, int):
            needle = bytes([needle])
        return self.find(needle) >= 0


#: A file's bytes as the readers hold them: bytes, or a map of a large plain file (:func:`read_mapped`).
RawBytes = bytes | MappedFile


def suffixes(path: Path) -> str:
    """The format suffix of a path, ``.gz`` removed: ``run.trec.gz`` -> ``.trec``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).suffix


#: Environment variable that sets the largest input file read, in bytes (default :data:`DEFAULT_MAX_INPUT_BYTES`).
MAX_INPUT_BYTES_ENV = "DIAGNOSE_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = (
    4 * 2**30
)  # 4 GiB: a file is read whole into memory, and parsing needs a few times more


def max_input_bytes() -> int:
    """The size limit of one input file (and of a gzip file once decompressed, and of a corpus folder in all).

    ``DIAGNOSE_MAX_INPUT_BYTES`` (a positive integer number of bytes) overrides the 4 GiB default.
    """
    text = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_INPUT_BYTES
    if not re.fullmatch(r"[0-9]+", text) or int(text) <= 0:
        raise DataError(
            f"{MAX_INPUT_BYTES_ENV}={text!r} is not a positive whole number of bytes. Expected e.g. "
            f"{MAX_INPUT_BYTES_ENV}={8 * 2**30} for 8 GiB. Fix: set it to a number of bytes, or unset it for the "
            f"default ({file_size(DEFAULT_MAX_INPUT_BYTES)})."
        )
    return int(text)


def file_size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return plural_of(n, "byte")


def too_big_fix() -> str:
    return (
        f"split the file, or raise the limit with the environment variable {MAX_INPUT_BYTES_ENV} "
        f"(e.g. {MAX_INPUT_BYTES_ENV}={8 * 2**30} for 8 GiB)"
    )


_NOT_REGULAR = (
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file: reading it could wait forever"),
    (stat.S_ISCHR, "is a device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def os_error(file: str, e: OSError, expected: str) -> DataError:
    """A DataError for an OSError raised by stat/open/read on a user path."""
    if isinstance(e, FileNotFoundError):
        return fatal_error(
            file, None, "file not found", None, expected, f"check the path (relative to {Path.cwd()})"
        )
    if isinstance(e, PermissionError):
        return fatal_error(
            file,
            None,
            "permission denied (the file cannot be read, or a folder on its path cannot be searched)",
            None,
            expected,
            "give read permission on the file and search (x) permission on every folder above it "
            "(e.g. chmod a+r FILE, chmod a+x FOLDER), or copy the file somewhere readable",
        )
    if e.errno == errno.ENAMETOOLONG:
        longest = max((len(part) for part in Path(file).parts), default=0)
        return fatal_error(
            file,
            None,
            "the path is too long for the file system",
            f"its longest name has {longest} characters, the path {len(file)}; names are limited to 255 bytes",
            expected,
            "rename the file (or the folder) to a shorter name",
        )
    if isinstance(e, NotADirectoryError):
        return fatal_error(
            file, None, "a part of the path is a file, not a folder", None, expected, "check the path"
        )
    if e.errno == errno.ELOOP:
        return fatal_error(
            file, None, "too many levels of symbolic links", None, expected, "fix the symbolic links"
        )
    return fatal_error(
        file,
        None,
        "cannot read the file",
        e.strerror or str(e),
        expected,
        "check the path and its permissions",
    )


def stat_path(path: PathLike, expected: str, *, missing_ok: bool = True) -> os.stat_result | None:
    """``os.stat(path)``; None when it does not exist (``missing_ok``); any other failure is a DataError naming the
    path."""
    file = str(path)
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError) as e:
        if missing_ok:
            return None
        raise os_error(file, e, expected) from None
    except OSError as e:
        raise os_error(file, e, expected) from None
    except ValueError:  # a NUL character in the path
        raise fatal_error(
            file, None, "the path contains a NUL character", None, expected, "check the path"
        ) from None


def exists(path: PathLike) -> bool:
    """Whether ``path`` names anything; False (never an exception) when it cannot be looked up."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


#: The folders input files must resolve inside (None: anywhere); set by :func:`confine_reads`, per context.
_READ_ROOTS: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar(
    "read_roots", default=None
)


def confine_reads(*roots: PathLike) -> contextvars.Token:
    """From now on, in this context, every input file this package reads must resolve inside one of ``roots``
    (symbolic links followed, ``..`` removed): a link inside a root to a file outside every root is refused like a
    path outside them. No roots: reads anywhere again. Returns the token for ``_READ_ROOTS.reset``.

    The app confines each script run to the folders of its data source; a thread started with a copy of the
    context (:func:`contextvars.copy_context`) is confined too. The CLI and the Python API are not confined."""
    value = tuple(Path(os.path.realpath(r)) for r in roots) or None
    return _READ_ROOTS.set(value)


def check_confined(path: PathLike, expected: str, *, shown: str | None = None) -> None:
    """Refuse ``path`` when reads are confined (:func:`confine_reads`) and its real path lies outside every root.
    The message names the path typed or listed, never the target's content."""
    roots = _READ_ROOTS.get()
    if roots is None:
        return
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        real = None
    if real is None or not any(real.is_relative_to(r) for r in roots):
        raise fatal_error(
            shown or str(path),
            None,
            "resolves (through a symbolic link or '..') to a file outside the data folder "
            f"{str(roots[0])!r}, and only files inside it are read",
            None,
            expected,
            "copy the file into the data folder instead of linking to it",
        )


def check_confined_folder(folder: PathLike, expected: str) -> None:
    """:func:`check_confined` on ``folder`` and on everything inside it, symbolic links not followed but each one's
    target checked: a database folder (a vector database's files, read by its own client, not by this package) under
    the data folder must not hold a link to a file or folder outside it. Nothing is walked when reads are not
    confined."""
    if _READ_ROOTS.get() is None:
        return
    check_confined(folder, expected)
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            check_confined(path, expected, shown=path)


def _check_opened(f: stdio.BufferedReader, file: str, expected: str) -> None:
    """:func:`check_confined` on what was actually opened (``/proc/self/fd``): a link swapped in after the check."""
    if _READ_ROOTS.get() is not None and os.path.isdir("/proc/self/fd"):
        check_confined(f"/proc/self/fd/{f.fileno()}", expected, shown=file)


def check_input_path(path: PathLike, expected: str, *, folder: bool | None = False) -> os.stat_result:
    """Refuse, before reading, a path that cannot be read safely; returns its ``os.stat`` result.

    ``folder`` False: a regular file (or a symbolic link to one) no larger than :func:`max_input_bytes`; True: a
    folder; None: either. Named pipes (FIFOs, which may never end), devices (``/dev/zero`` never ends) and
    sockets are refused. Failures of ``stat`` (not found, permission denied, a name too long) are DataErrors that
    name the path and the fix.
    """
    file = str(path)
    check_confined(path, expected)
    st = stat_path(path, expected, missing_ok=False)
    assert st is not None  # missing_ok=False: a missing path is a DataError
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        if folder is False:
            raise fatal_error(
                file, None, "is a folder, not a file", None, expected, "pass the file inside the folder"
            )
        return st
    if folder is True:
        raise fatal_error(file, None, "is a file, not a folder", None, expected, "pass the folder")
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise fatal_error(
                file,
                None,
                what,
                None,
                expected + " in a regular file",
                "write the data to a regular file first (e.g. cat SOURCE > run.trec) and pass that file",
            )
    if not stat.S_ISREG(mode):
        raise fatal_error(file, None, "is not a regular file", None, expected, "pass a regular file")
    limit = max_input_bytes()
    if st.st_size > limit:
        raise fatal_error(
            file,
            None,
            f"is {file_size(st.st_size)}{f' ({st.st_size} bytes)' if st.st_size >= 1024 else ''}, more than the "
            f"input limit of {file_size(limit)}",
            None,
            f"input files of at most {limit} bytes",
            too_big_fix(),
        )
    return st


def check_input_files(*paths: PathLike | None, expected: str = "a readable regular file") -> None:
    """:func:`check_input_path` for every path that is not None (for readers outside this module)."""
    for path in paths:
        if path is not None:
            check_input_path(path, expected)


_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate stream
_GZ_IN, _GZ_OUT = 1 << 16, 1 << 20  # compressed bytes fed, decompressed bytes taken, per step
_NONZERO = re.compile(rb"[^\x00]")


def _gunzipped_size(raw: bytes, limit: int) -> int:
    """The decompressed size of ``raw`` (every gzip member; zero padding between and after members skipped, as
    :class:`gzip.GzipFile` does), counted step by step and never kept: it stops as soon as it passes ``limit``, so a
    gzip bomb costs a few MB of memory and the time to decompress ``limit`` bytes."""
    size, pos, view = 0, 0, memoryview(raw)
    while (start := _NONZERO.search(raw, pos)) is not None:
        pos = start.start()
        d = zlib.decompressobj(_GZIP_WBITS)
        while not d.eof:
            chunk = view[pos : pos + _GZ_IN]
            pos += len(chunk)
            out = len(d.decompress(chunk, _GZ_OUT))
            size += out
            while (d.unconsumed_tail or out == _GZ_OUT) and not d.eof and size <= limit:
                out = len(d.decompress(d.unconsumed_tail, _GZ_OUT))
                size += out
            if size > limit:
                return size
            if not chunk and not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
        pos -= len(d.unused_data)
    return size


def _gunzip(raw: bytes, limit: int) -> bytes | None:
    """Decompressed ``raw`` (all gzip members), or ``None`` when it decompresses to more than ``limit`` bytes.

    Two passes: :func:`_gunzipped_size` counts without keeping anything (a bomb is refused there), then the
    bytes are decompressed once into one object of that size: peak memory is the decompressed size, never twice
    it, and never more than ``limit`` whatever the file claims."""
    size = _gunzipped_size(raw, limit)
    if size > limit:
        return None
    with gzip.GzipFile(fileobj=stdio.BytesIO(raw)) as gz:
        return gz.read(size)


#: Files at least this large are mapped, not read, by :func:`read_mapped`: below it the copy is the safe choice
#: (a copy cannot fault when another program truncates the file) and costs little (a 1M-line run, 35 MB: ~25 ms).
MAP_MIN_BYTES = 256 * 2**20


def read_mapped(path: PathLike, expected: str) -> RawBytes:
    """:func:`read_bytes`, or, for a plain file of at least :data:`MAP_MIN_BYTES` (not gzip, no byte-order mark),
    a read-only memory map of it: the same bytes without a copy in the process' memory (256 MiB and more).

    A :class:`MappedFile` supports what the fast readers use: ``len``, ``in``, ``find``, slicing (which gives bytes)
    and the buffer protocol (pyarrow reads it in place). It is not ``bytes`` (no ``split``, ``decode``, ...): other
    code takes :func:`as_bytes` of it first. Same checks and errors as :func:`read_bytes`.

    A file another program changes while it is read: the size found by ``stat`` and the bytes read (or mapped)
    must agree, else a DataError says the file changed while it was read (read it again once the writer is done);
    after parsing, :func:`check_unchanged` compares the size and modification time once more. The choice for
    truncation: a memory map whose file is truncated under it ends the process with SIGBUS at the next access to a
    page past the new end, which no Python code can catch; so files below :data:`MAP_MIN_BYTES` (every run of up to
    ~7M lines) are copied, never mapped, and truncating them mid-read gives the DataError. A larger file is still
    mapped (a copy would cost its size in memory); the CLI turns on :mod:`faulthandler`, so a SIGBUS there prints
    "Fatal Python error: Bus error" and where, never a silent death (docs/formats.md).
    """
    file = str(path)
    st = check_input_path(path, expected)
    if st.st_size < MAP_MIN_BYTES or not hasattr(mmap, "MAP_SHARED"):  # small, or not POSIX
        return _read_checked(path, expected, size=st.st_size)
    marks = (b"\x1f\x8b", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    mapped = None
    try:
        with open(path, "rb") as f:
            _check_opened(f, file, expected)
            if not f.read(3).startswith(marks):  # else gunzipped, the mark removed, or refused: read below
                try:
                    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
                    mapped = MappedFile(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
                except (OSError, ValueError):  # a file system without mmap, or a file emptied since the check
                    pass
    except OSError as e:
        raise os_error(file, e, expected) from None
    if mapped is None:
        return _read_checked(path, expected, size=st.st_size)
    if len(mapped) != st.st_size:
        n = len(mapped)
        mapped.close()
        raise _changed(file, st.st_size, n, expected)
    mapped.stamp = (st.st_size, st.st_mtime_ns)
    return mapped


def _changed(file: str, before: int, after: int | None, expected: str) -> DataError:
    """The DataError of a file another program wrote while it was read."""
    seen = f"{before:,} bytes when checked, {after:,} when read" if after is not None else None
    return fatal_error(
        file, None, "changed while it was being read (another program is writing it)", seen, expected,
        "wait until the program writing it has finished (or copy the file first), then run again",
    )  # fmt: skip


def check_unchanged(raw: RawBytes, path: PathLike, expected: str) -> None:
    """After parsing a :func:`read_mapped` map: its file still has the size and modification time it had when it
    was mapped, else the DataError of a file changed while it was read (bytes: nothing to check, the copy was
    checked when read)."""
    stamp = getattr(raw, "stamp", None)
    if stamp is None:
        return
    try:
        st = os.stat(path)
    except OSError:
        raise _changed(str(path), stamp[0], None, expected) from None
    if (st.st_size, st.st_mtime_ns) != stamp:
        raise _changed(str(path), stamp[0], st.st_size, expected)


def as_bytes(data: RawBytes) -> bytes:
    """``data`` as bytes: itself, or a copy of a :func:`read_mapped` map."""
    return data if isinstance(data, bytes) else data[:]


def read_bytes(path: PathLike, expected: str) -> bytes:
    """The file's bytes: gunzipped when it is gzip, UTF-8 BOM removed.

    Fatal (DataError naming the path) when missing, unreadable, not a regular file, or larger than
    :func:`max_input_bytes` (also once decompressed).
    """
    check_input_path(path, expected)  # a regular file within the limit: reading it whole ends
    return _read_checked(path, expected)


def _read_checked(path: PathLike, expected: str, *, size: int | None = None) -> bytes:
    """:func:`read_bytes` once the path has passed :func:`check_input_path`; ``size``: the size ``stat`` gave,
    which the bytes read must have (else the file changed while it was read: a DataError)."""
    file = str(path)
    limit = max_input_bytes()
    try:
        with open(path, "rb") as f:
            _check_opened(f, file, expected)
            raw = f.read()
    except OSError as e:
        raise os_error(file, e, expected) from None
    except MemoryError as e:
        raise out_of_memory(e, f"reading {file}") from None
    if size is not None and len(raw) != size:
        raise _changed(file, size, len(raw), expected)
    if len(raw) > limit:  # it grew after the check
        raise fatal_error(
            file, None, f"is more than the input limit of {file_size(limit)}", None, expected, too_big_fix()
        )
    if raw[:2] == b"\x1f\x8b":
        try:
            out = _gunzip(raw, limit)
        except (OSError, EOFError, zlib.error) as e:
            raise fatal_error(
                file,
                None,
                "is not a valid gzip file",
                str(e),
                expected,
                "re-compress it or pass it uncompressed",
            ) from None
        except MemoryError as e:
            raise out_of_memory(e, f"decompressing {file}") from None
        if out is None:
            raise fatal_error(
                file,
                None,
                f"decompresses to more than the input limit of {file_size(limit)}",
                None,
                f"input files of at most {limit} bytes once decompressed",
                too_big_fix(),
            )
        raw = out
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise fatal_error(
            file,
            1,
            "the file is UTF-16 encoded",
            "byte-order mark",
            expected + " in UTF-8",
            "re-save it as UTF-8",
        )
    return raw
