"""What kind of retriever an object is (a callable, LangChain, LlamaIndex), recognised without importing those
packages (an object of theirs can only exist once its package is imported, so the checks look in ``sys.modules``);
its default name; LangChain's ``k``; and what to tell the user when an object is no retriever."""

from __future__ import annotations

import inspect
import sys
from typing import Any

from diagnose.data import ValidationReport

_LANGCHAIN_RETRIEVER_MODULE = "langchain_core.retrievers"
_LANGCHAIN_RUNNABLE_MODULE = "langchain_core.runnables.base"
_LLAMAINDEX_RETRIEVER_MODULE = "llama_index.core.base.base_retriever"

_FORMS = (
    "a callable str -> [doc_id, ...] or [(doc_id, score), ...], a LangChain retriever (langchain_core "
    "BaseRetriever) or a LlamaIndex retriever (llama_index.core BaseRetriever)"
)


def retriever_kind(obj: Any) -> str | None:
    """``"langchain"``, ``"llamaindex"``, ``"callable"`` or None; isinstance against already-imported packages,
    then duck typing. Nothing is imported here."""
    lc = sys.modules.get(_LANGCHAIN_RETRIEVER_MODULE)
    if lc is not None and isinstance(obj, lc.BaseRetriever):
        return "langchain"
    li = sys.modules.get(_LLAMAINDEX_RETRIEVER_MODULE)
    if li is not None and isinstance(obj, li.BaseRetriever):
        return "llamaindex"
    if inspect.isclass(obj):
        return None
    lr = sys.modules.get(_LANGCHAIN_RUNNABLE_MODULE)
    if lr is not None and isinstance(obj, lr.Runnable):
        return "langchain"
    if callable(getattr(obj, "invoke", None)) and callable(getattr(obj, "batch", None)):
        return "langchain"
    if callable(getattr(obj, "retrieve", None)):
        return "llamaindex"
    if callable(getattr(obj, "as_retriever", None)):
        return None  # a vector store or an index: not_a_retriever says what to do
    if callable(obj):
        return "callable"
    return None


def not_a_retriever(obj: Any, what: str) -> str:
    return f"{what} is {describe(obj)}, not a retriever. {fix_for(obj)}"


def fix_for(obj: Any) -> str:
    if callable(getattr(obj, "as_retriever", None)):
        return (
            "It looks like a vector store or an index: pass obj.as_retriever(search_kwargs={'k': 100}) "
            "(LangChain) or index.as_retriever(similarity_top_k=100) (LlamaIndex) instead."
        )
    return f"Fix: pass {_FORMS}, or a function with no arguments returning one."


def is_factory(obj: Any) -> bool:
    """A class, or a function that can be called with no argument (but not a LangChain/LlamaIndex object)."""
    if inspect.isclass(obj):
        return True
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    required = [
        p
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return not required


def describe(obj: Any) -> str:
    if inspect.isclass(obj):
        return f"the class {obj.__qualname__}"
    name = type_name(obj)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def type_name(obj: Any) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def default_name(retriever: Any) -> str:
    own = getattr(retriever, "name", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    fn_name = getattr(retriever, "__name__", None)
    if isinstance(fn_name, str) and fn_name and fn_name != "<lambda>":
        return fn_name
    return type(retriever).__name__ if not inspect.isfunction(retriever) else "retriever"


def with_k(retriever: Any, depth: int, report: ValidationReport, run_name: str) -> Any:
    """A copy of a LangChain retriever with ``search_kwargs["k"] = depth`` when it has search_kwargs without k."""
    kwargs = getattr(retriever, "search_kwargs", None)
    copy = getattr(retriever, "model_copy", None)
    if not isinstance(kwargs, dict) or "k" in kwargs or not callable(copy):
        return retriever
    try:
        new = copy(update={"search_kwargs": {**kwargs, "k": depth}})
    except Exception:  # not a pydantic model after all: leave it as the user made it
        return retriever
    report.add(
        "retriever_k_set",
        f"retriever {run_name!r}: its search_kwargs had no 'k' (LangChain's default is 4), so it was asked for "
        f"k={depth} (= depth). Set search_kwargs={{'k': ...}} yourself to choose.",
        severity="info",
    )
    return new
