"""``--retriever NAME=module:attr``: the spec parsed into a name and a target, then the module (or a ``.py`` file)
imported and the retriever taken or its factory called."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from diagnose.data import DataError
from diagnose.retrievers.kinds import describe, fix_for, is_factory, not_a_retriever, retriever_kind


def parse_retriever_spec(spec: str) -> tuple[str, str]:
    """``"NAME=module:attr"`` (how ``--retriever`` and ``DIAGNOSE_RETRIEVERS`` name a live retriever) as ``(name,
    target)``, both stripped; ``target`` is what :func:`load_retriever` takes. Nothing is imported here.

    Raises :class:`~diagnose.data.DataError` (``param="retriever"``) when the name, the ``=`` or the ``:`` is
    missing."""
    name, sep, target = spec.partition("=")
    if not sep or not name.strip() or ":" not in target:
        raise DataError(
            f"retriever expects NAME=module:attr, e.g. prod=my_rag:retriever; got {spec!r}.",
            param="retriever",
        )
    return name.strip(), target.strip()


def load_retriever(spec: str) -> Any:
    """The retriever named by ``spec`` = ``"module:attr"`` (for the CLI's ``--retriever NAME=module:attr``).

    ``module`` is imported with the current directory on ``sys.path`` (so ``my_rag.py`` next to you works), or is
    a path to a ``.py`` file (``path/to/my_rag.py:attr``). ``attr`` (dots allowed: ``module:obj.retriever``) is
    either a retriever (see :func:`run_retriever`) or a factory: a function or class callable with no argument,
    which is called once and must return a retriever. A function needing exactly one argument is taken as a
    plain ``str -> results`` retriever itself.

    Raises :class:`~diagnose.data.DataError` naming the spec, what went wrong and the fix when the module or the
    attribute is missing, the import or the factory raises (any ``BaseException``, ``SystemExit`` included, but
    ``KeyboardInterrupt``: Ctrl-C still stops), or the object is no retriever.
    """
    module_name, sep, attr = spec.strip().partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not sep or not module_name or not attr:
        raise DataError(
            f"retriever spec {spec!r}: expected 'module:attr' (e.g. 'my_rag:retriever' for the object `retriever` "
            "in my_rag.py, or 'path/to/my_rag.py:make_retriever' for a zero-argument factory)."
        )
    module = _import(module_name, spec)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(module) if not n.startswith("_"))
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            raise DataError(
                f"retriever spec {spec!r}: {getattr(module, '__file__', module_name)} has no attribute {attr!r} "
                f"(it defines: {shown or 'nothing public'}). Fix: name the variable holding your retriever, or a "
                "function with no arguments that returns it."
            )
        obj = getattr(obj, part)
    if retriever_kind(obj) is not None and not is_factory(obj):
        return obj
    if not is_factory(obj):
        raise DataError(f"retriever spec {spec!r}: " + not_a_retriever(obj, attr))
    try:
        made = obj()
    except KeyboardInterrupt:  # Ctrl-C (or indistinguishable from it in this thread): stop
        raise
    except BaseException as e:  # noqa: BLE001 - user code: a SystemExit in a factory is a mistake to report
        raise DataError(
            f"retriever spec {spec!r}: calling the factory {attr}() raised {type(e).__name__}: {e}. Fix: make "
            f"{attr}() work on its own (try python -c 'import {module_name.removesuffix('.py')}' and call it)."
        ) from e
    if retriever_kind(made) is None:
        raise DataError(
            f"retriever spec {spec!r}: the factory {attr}() returned {describe(made)}, not a retriever. "
            + fix_for(made)
        )
    return made


def _import(module_name: str, spec: str) -> Any:
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise DataError(
                f"retriever spec {spec!r}: there is no file {path.resolve()}. Fix: give the path of the .py file "
                "that defines your retriever, or a module name importable from here."
            )
        mod_name = f"_diagnose_retriever_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise DataError(f"retriever spec {spec!r}: cannot load {path} as a Python module.")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except KeyboardInterrupt:
            sys.modules.pop(mod_name, None)
            raise
        except BaseException as e:  # noqa: BLE001 - user code: sys.exit() at import is a mistake to report
            sys.modules.pop(mod_name, None)
            raise _import_failed(spec, str(path), e) from e
        return module
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise DataError(
                f"retriever spec {spec!r}: no module named {e.name!r} in the current directory ({cwd}) or the "
                f"installed packages. Fix: run from the folder holding {module_name.replace('.', '/')}.py, install "
                "its package, or give a file path like path/to/my_rag.py:retriever."
            ) from e
        raise _import_failed(spec, module_name, e) from e
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - user code: sys.exit() at import is a mistake to report
        raise _import_failed(spec, module_name, e) from e


def _import_failed(spec: str, where: str, e: BaseException) -> DataError:
    return DataError(
        f"retriever spec {spec!r}: importing {where} raised {type(e).__name__}: {e}. Fix the module (import it "
        "in Python to see the traceback) or install what it needs."
    )
