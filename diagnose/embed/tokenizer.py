"""A sentence-transformers model folder's tokenizer and ``max_seq_length``, read from its files without loading the
weights: what the model's window needs (:func:`diagnose.failures.passages.model_window`), so that a run whose vectors
all come from the cache learns the window without loading the model (the tokenizer alone takes ~3 s of the ~10 s a
model load takes here, most of it the torch import that transformers makes).

Only the plain layout is read this way, where the result is what sentence-transformers builds: ``modules.json``'s
first module a ``Transformer``, its folder's ``sentence_bert_config.json`` giving ``max_seq_length`` and no other
setting that changes the tokenizer (``do_lower_case`` true, tokenizer or processor arguments), and a
``tokenizer.json``. The tokenizer is ``AutoTokenizer.from_pretrained(folder, model_max_length=max_seq_length)``,
as sentence-transformers' ``Transformer`` loads it. Any other layout returns None: the caller loads the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from diagnose.checks import is_int

#: ``sentence_bert_config.json`` keys this reader understands; any other key sends the caller to the model itself
_KNOWN_KEYS = {"max_seq_length", "do_lower_case"}


def folder_tokenizer(folder: str | Path) -> tuple[Any, int] | None:
    """``(tokenizer, max_seq_length)`` of the model folder ``folder``, or None (see the module docstring)."""
    root = Path(folder)
    sub = _transformer_folder(root)
    if sub is None:
        return None
    try:
        config = json.loads((sub / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    max_len = config.get("max_seq_length") if isinstance(config, dict) else None
    if (
        not is_int(max_len)
        or max_len <= 0
        or set(config) - _KNOWN_KEYS
        or config.get("do_lower_case")
        or not (sub / "tokenizer.json").is_file()
    ):
        return None
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(sub), local_files_only=True, model_max_length=max_len)
    except Exception:  # noqa: BLE001 - any failure: the caller loads the model, which reports its own errors
        return None
    return tokenizer, max_len


def _transformer_folder(root: Path) -> Path | None:
    """The folder of ``modules.json``'s first module when it is a ``Transformer``, else None."""
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(modules, list) or not modules or not isinstance(modules[0], dict):
        return None
    first = modules[0]
    if not str(first.get("type", "")).endswith(".Transformer"):
        return None
    sub = (root / str(first.get("path", ""))).resolve()
    return sub if sub.is_dir() and sub.is_relative_to(root.resolve()) else None
