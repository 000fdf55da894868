"""A sentence-transformers model folder's tokenizer and ``max_seq_length``, read from its files without loading the
weights: what the model's window needs (:func:`diagnose.failures.passages.model_window`), so that a run whose vectors
all come from the cache learns the window without loading the model (the tokenizer alone takes ~3 s of the ~10 s a
model load takes here, most of it the torch import that transformers makes).

Only the plain layout is read this way, where the result is what sentence-transformers builds: ``modules.json``'s
first module a ``Transformer``, its folder's ``sentence_bert_config.json`` giving ``max_seq_length`` and no other
setting that changes the tokenizer (``do_lower_case`` true, tokenizer or processor arguments), and a
``tokenizer.json``. The tokenizer is that ``tokenizer.json`` read by the ``tokenizers`` library alone
(:class:`FolderTokenizer`: the backend of the fast tokenizer that ``AutoTokenizer.from_pretrained(folder)`` builds and
sentence-transformers' ``Transformer`` loads, without importing transformers and so torch: ~7 of the ~12 CPU-s of a
warm ``diagnose failures`` on the demo went to that import). Any other layout returns None: the caller loads the model.
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
        tokenizer = FolderTokenizer(sub / "tokenizer.json", max_len)
    except Exception:  # noqa: BLE001 - any failure: the caller loads the model, which reports its own errors
        return None
    return tokenizer, max_len


class FolderTokenizer:
    """A ``tokenizer.json`` read by the ``tokenizers`` library, answering the two calls a transformers fast
    tokenizer answers for :func:`diagnose.failures.passages.model_window`: ``tokenizer(texts,
    add_special_tokens=..., return_offsets_mapping=True, truncation=False)`` (a dict of ``input_ids`` and
    ``offset_mapping`` lists, one per text; the file's own truncation and padding are switched off, as transformers
    does for ``truncation=False`` and no padding) and ``num_special_tokens_to_add(pair=False)``.
    ``model_max_length``: the folder's ``max_seq_length``. The spans equal the loaded model's
    (``tests/test_passages.py::test_the_bundled_model_window_comes_from_its_files_without_loading_the_weights``)."""

    def __init__(self, path: Path, max_len: int) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.model_max_length = max_len

    def __call__(
        self,
        texts: list[str],
        *,
        add_special_tokens: bool = True,
        return_offsets_mapping: bool = False,
        truncation: bool = False,
        verbose: bool = True,
    ) -> dict[str, list[Any]]:
        if truncation:
            raise ValueError("FolderTokenizer does not truncate: load the model's own tokenizer for that.")
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        out: dict[str, list[Any]] = {"input_ids": [e.ids for e in encodings]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encodings]
        return out

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return int(self._tok.num_special_tokens_to_add(pair))


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
