"""load_retriever: a 'module:attr' spec names a retriever, a factory or a file path; every mistake names the spec
and the fix.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from diagnose.data import DataError
from diagnose.retrievers import load_retriever, run_retriever

MODULE = """
CALLS = []

def search(text):
    return ["d1", "d2"]

def make_retriever():
    CALLS.append(1)
    return search

def broken_factory():
    raise RuntimeError("no index at ./index")

def returns_number():
    return 42

class Store:
    def as_retriever(self, **kwargs):
        return search

store = Store()
value = 42
"""


@pytest.fixture
def rag_module(tmp_path, monkeypatch):
    name = f"rag_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    sys.modules.pop(name, None)


def test_load_retriever_object_factory_and_file_path(rag_module, tmp_path):
    search = load_retriever(f"{rag_module}:search")  # one-argument function: the retriever itself
    assert search("x") == ["d1", "d2"]
    made = load_retriever(f"{rag_module}:make_retriever")  # zero-argument factory: called once
    assert made is search and sys.modules[rag_module].CALLS == [1]
    by_path = load_retriever(f"{tmp_path / (rag_module + '.py')}:search")
    assert by_path("x") == ["d1", "d2"]
    assert run_retriever(made, {"q1": "a"}).ranked_lists() == {"q1": ["d1", "d2"]}


@pytest.mark.parametrize(
    ("attr_or_spec", "message"),
    [
        ("no_such_module_xyz:r", r"no module named 'no_such_module_xyz'.*Fix: run from the folder"),
        ("{m}:nope", r"has no attribute 'nope' \(it defines: .*make_retriever"),
        (
            "{m}:broken_factory",
            r"calling the factory broken_factory\(\) raised RuntimeError: no index at ./index",
        ),
        ("{m}:returns_number", r"returned an int, not a retriever"),
        ("{m}:value", r"value is an int, not a retriever"),
        ("{m}:store", r"looks like a vector store or an index.*as_retriever"),
        ("{m}", r"expected 'module:attr'"),
    ],
)
def test_load_retriever_errors_name_the_spec_and_the_fix(rag_module, attr_or_spec, message):
    spec = attr_or_spec.format(m=rag_module)
    with pytest.raises(DataError, match=message) as err:
        load_retriever(spec)
    assert repr(spec) in str(err.value)
