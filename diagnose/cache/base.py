"""What every cache shares: where caches live (:func:`default_cache_root`), keys and folder names (:func:`text_key`,
:func:`slug`), and how a cache problem is reported (:class:`CacheWarning`, :func:`report_corrupt`).
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from pathlib import Path

from diagnose.data import ValidationReport

CACHE_ENV_VAR = "DIAGNOSE_CACHE_DIR"


class CacheWarning(UserWarning):
    """A cache file was unreadable or could not be written; the values are recomputed."""


def default_cache_root() -> Path:
    """``$DIAGNOSE_CACHE_DIR`` if set and non-empty, else ``platformdirs.user_cache_dir("diagnose")``."""
    env = os.environ.get(CACHE_ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("diagnose"))


def text_key(text: str) -> str:
    """Content key of a text: the hex SHA-1 of its UTF-8 bytes (40 ASCII characters).

    Lone surrogates (possible in text decoded from broken JSON) are kept with ``surrogatepass`` so every ``str`` has
    a key and different strings never share one.
    """
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def slug(name: str, max_len: int = 48) -> str:
    """A filesystem-safe, readable prefix of ``name`` (letters, digits, ``-_.``), for folder names."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")
    return s[:max_len] or "x"


def warn(report: ValidationReport | None, code: str, message: str, path: Path | None) -> None:
    if report is not None:
        report.add(code, message, severity="warning", file=str(path) if path else None)
    else:
        where = f"{path}: " if path else ""
        warnings.warn(f"{where}{message}", CacheWarning, stacklevel=3)


def report_corrupt(report: ValidationReport | None, path: Path, reason: str) -> None:
    """Report a cache file that could not be used (a ``cache_corrupt`` warning, or a :class:`CacheWarning` without
    a report) and delete it, so its values are recomputed and written again."""
    warn(
        report,
        "cache_corrupt",
        f"cache file was unreadable or failed its check ({reason}); it was deleted and its values are recomputed",
        path,
    )
    unlink(path)


def unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:  # e.g. Windows refuses to delete a file that is memory-mapped; a later run retries
        pass
