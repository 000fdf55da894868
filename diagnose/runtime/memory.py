"""Running out of memory is not a bug: :func:`out_of_memory` turns it into a :class:`~diagnose.data.DataError` saying
how much the step needed and how much this machine allowed, which the CLI prints with exit code 2 and the app shows
as a message.

What counts as running out (:func:`is_out_of_memory`): ``MemoryError`` (numpy's "Unable to allocate", pyarrow's
``ArrowMemoryError``), an ``OSError`` with ``ENOMEM``, and torch's "can't allocate memory" ``RuntimeError``, also
when another exception wraps one of them.

The estimate is honest about being one: *needed* is the process's peak size when it failed plus the allocation that
failed (read from the message when it says, e.g. "Unable to allocate 7.63 MiB", "malloc of size 337792 failed"), a
lower bound. *Allowed* is the address-space limit (``ulimit -v``, ``prlimit --as``) when one is set, else the
cgroup's ``memory.max`` (a container), else the machine's RAM; the peak compared with it is the virtual size
(``VmPeak``) for the address-space limit, the resident size (``VmHWM``) otherwise.
"""

from __future__ import annotations

import errno
import os
import re
import resource
from pathlib import Path

from diagnose.errors import DataError
from diagnose.runtime.threads import is_thread_start_failure

_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50, "EiB": 2**60}
_NUMPY = re.compile(r"allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB|PiB|EiB)\b")
_BYTES = re.compile(r"(?:size|allocate)(?: of)? ([0-9]+)(?: bytes)?\b")
_TORCH = ("can't allocate memory", "DefaultCPUAllocator", "out of memory")


def is_out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` (or an exception it was raised from or during) means an allocation failed."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, MemoryError):
            return True
        if isinstance(cur, OSError) and cur.errno == errno.ENOMEM:
            return True
        if isinstance(cur, RuntimeError) and any(t in str(cur) for t in _TORCH):
            return True
        if is_thread_start_failure(cur):  # a thread's stack could not be allocated
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def failed_allocation(e: BaseException) -> int | None:
    """The size in bytes of the allocation that failed, when the message says it."""
    text = str(e)
    m = _NUMPY.search(text)
    if m:
        return int(float(m.group(1)) * _UNITS[m.group(2)])
    m = _BYTES.search(text)
    return int(m.group(1)) if m else None


def memory_allowed() -> tuple[int | None, str]:
    """``(bytes, where the limit comes from)``: the address-space limit, the cgroup's limit, or the RAM."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return soft, "the address-space limit of this process, ulimit -v / prlimit --as"
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if text.isdigit():
            return int(text), "the memory limit of this container, cgroup memory.max"
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "the memory of this machine"
    except (OSError, ValueError):
        return None, "unknown"


def _peak(virtual: bool) -> int | None:
    """The process's peak size: virtual (VmPeak) or resident (VmHWM), in bytes."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 if not virtual else None
    m = re.search(rf"^{'VmPeak' if virtual else 'VmHWM'}:\s+([0-9]+) kB", status, re.M)
    return int(m.group(1)) * 1024 if m else None


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def out_of_memory(e: BaseException, doing: str = "") -> DataError:
    """The message for a step that ran out of memory: "needs about N GB, this machine allowed M", and the fixes."""
    allowed, source = memory_allowed()
    peak = _peak(virtual=source.startswith("the address-space"))
    failed = failed_allocation(e)
    if peak and failed:
        needs = f"needs about {_gb(peak + failed)} or more ({_gb(peak)} in use at the peak, plus {_gb(failed)} it "
        needs += "could not allocate)"
    elif peak or failed:
        needs = (
            f"needs more than about {_gb(peak or failed or 0)} (what it {'reached' if peak else 'asked for'})"
        )
    else:
        needs = "needs more memory than it could get"
    limit = f"this machine allowed {_gb(allowed)} ({source})" if allowed else "the limit is unknown"
    step = f" while {doing}" if doing else ""
    return DataError(
        f"out of memory{step}: it {needs}, and {limit}. Fix: run on a machine with more memory or raise the "
        "limit; or give it less at once: a smaller corpus, fewer queries or a shorter run (e.g. its top 100 per "
        "query), or a smaller DIAGNOSE_MAX_INPUT_BYTES so a too-large file is refused before it is read."
    )
