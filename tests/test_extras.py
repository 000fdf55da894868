"""The light core: without the optional packages (blocked here, as in a core-only install), `diagnose evaluate`
works and anything that needs an extra names it. CI also checks a real core-only install in a fresh venv."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_corpus"

BLOCKER = """
import importlib.abc, sys
from diagnose.runtime.extras import EXTRA_OF

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRA_OF:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Blocker())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_evaluate_runs_on_the_core_alone():
    done = _run(
        "from diagnose.cli import main\n"
        f"sys.exit(main(['evaluate', '--data', {str(DEMO)!r}, '--run', {str(DEMO / 'runs' / 'ann_minilm.trec')!r},"
        f" '--run', {str(DEMO / 'runs' / 'bm25_langchain.trec')!r}, '--format', 'json']))\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"ndcg@10"' in done.stdout


def test_a_missing_extra_is_named_in_the_cli_and_the_library():
    done = _run(
        "from diagnose.cli import main\n"
        f"sys.exit(main(['evaluate', '--data', {str(DEMO)!r}, '--run', {str(DEMO / 'runs' / 'ann_minilm.trec')!r},"
        " '--baseline', 'bm25']))\n"
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install 'diagnose-rag[embed]'" in done.stderr
    done = _run(
        "import diagnose\n"
        f"a = diagnose.Analysis(diagnose.load({str(DEMO)!r}), {{'ann': {str(DEMO / 'runs' / 'ann_minilm.trec')!r}}})\n"
        "print(round(a.metrics()['ndcg@10'].iloc[0], 4))\n"
        "try:\n"
        "    a.failures('ann')\n"
        "except diagnose.DataError as e:\n"
        "    print('refused:', e)\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout and "diagnose-rag[embed]" in done.stdout


def test_the_distribution_name_is_one_fact():
    """pyproject's distribution name is the one the messages name (``diagnose`` itself belongs to an unrelated
    project on the package index, so a user typing ``pip install diagnose`` would get something else)."""
    import tomllib

    from diagnose.runtime.extras import DISTRIBUTION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "diagnose"
    assert project["scripts"] == {"diagnose": "diagnose.cli:entry"}  # the command keeps its name


def test_importing_the_library_and_its_pipeline_loads_no_heavy_package():
    """Imports of diagnose's own modules sit at the top of each module (issue 17), except the analysis layers' domain
    modules, imported in the step that uses them (issue 24: `diagnose evaluate` loads none of them); the heavy and
    optional packages stay lazy, so `import diagnose`, the pipeline and the CLI load none of them until a step needs
    one."""
    code = (
        "import sys, diagnose, diagnose.analysis, diagnose.cli, diagnose.whatif.remedies, diagnose.whatif.model_choice\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'umap', 'streamlit', 'faiss', 'chromadb',\n"
        "         'lancedb', 'qdrant_client', 'rapidfuzz', 'altair', 'pydeck')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
