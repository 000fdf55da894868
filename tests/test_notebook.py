"""examples/quickstart.ipynb runs top to bottom (nbclient, a real kernel, the real bundled model), and is kept in
git without outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"


def test_the_notebook_is_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the quickstart has no code"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


@pytest.mark.real_model
def test_the_quickstart_notebook_runs(model_cache, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("langchain_core")
    # the run's shared model_cache (conftest): the demo's vectors are those the other real-model tests encode, as
    # on a user's second run (the kernel still loads the model: the LangChain cell encodes with it)
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and the traceback, when a cell fails
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    # the Analysis summary, the inspector view and the live retriever's latency are all shown
    assert any("failed queries" in h for h in html)
    assert any("Recommendation" in h for h in html)
    assert any("latency_p50_ms" in h for h in html)
    # no library noise in the cells: tqdm.auto's "IProgress not found" (no ipywidgets), transformers' own
    # "Loading weights" bar (diagnose's stage labels say what takes time)
    text = "".join(
        str(o.get("text", "")) + str(o.get("data", "")) for o in outputs if o.output_type != "error"
    )
    assert "TqdmWarning" not in text and "IProgress" not in text
    assert "Loading weights" not in text


def test_progress_true_draws_bars_in_a_notebook_and_not_in_a_log():
    """``progress=True`` means "where someone watches": a real Jupyter kernel counts (its stderr is not a tty), a
    process writing to a pipe does not."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    code = (
        "from diagnose.runtime.progress import reporter\n"
        "r = reporter(True)\n"
        "print(type(r).__name__, r.enabled)\n"
        "bar = r.bar('Encoding 2 texts')\n"
        "bar(1, 2)\n"
        "bar(2, 2)"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert stdout.strip() == "Terminal True"
    drawn = [o for o in outputs if o.get("name") == "stderr" or o.output_type == "display_data"]
    assert drawn and any("Encoding 2 texts" in str(o) for o in drawn), outputs

    piped = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[1],
    )
    assert piped.stdout.strip() == "Terminal False"
    assert piped.stderr == ""
