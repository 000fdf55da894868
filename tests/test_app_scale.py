"""Pages that scale (issue 23 item 5), in the app (AppTest, fake keyword encoder): a query with many missed targets
gives a bounded number of cards and the recommendation once per class; the map draws the lines of the selected and
the worst queries and says so; wide tables pin their key column.

The many-target query is made here: the demo's files with query q001 judged relevant to 9 documents (its own
hr-0001 and 8 more) and a run that retrieves none of them for q001, so all 9 are missed at k=10."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import app_testing as app
import pytest

from diagnose import defaults

pytestmark = pytest.mark.usefixtures("keyword_encoder")

QUERY = "q001"
EXTRA = 8


def _many_targets(root: Path) -> tuple[Path, list[str]]:
    """A BEIR folder and a run (runs/mine.trec) in which QUERY misses 1 + EXTRA relevant documents."""
    folder = root / "many"
    (folder / "qrels").mkdir(parents=True)
    (folder / "runs").mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        shutil.copyfile(app.DEMO / name, folder / name)
    docs = [json.loads(line)["_id"] for line in (app.DEMO / "corpus.jsonl").read_text().splitlines() if line]
    qrels = (app.DEMO / "qrels" / "test.tsv").read_text().splitlines()
    own = [line.split("\t")[1] for line in qrels if line.startswith(QUERY + "\t")]
    extra = [d for d in docs if d not in own][:EXTRA]
    relevant = own + extra
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels + [f"{QUERY}\t{d}\t1" for d in extra]) + "\n")
    others = [line for line in (app.DEMO / "runs" / "ann_minilm.trec").read_text().splitlines()]
    others = [line for line in others if line and not line.startswith(QUERY + " ")]
    mine = [d for d in docs if d not in relevant][:10]
    lines = [f"{QUERY} Q0 {d} {i + 1} {10 - i} mine" for i, d in enumerate(mine)] + others
    (folder / "runs" / "mine.trec").write_text("\n".join(lines) + "\n")
    return folder, relevant


def _open_inspector(tmp_path, monkeypatch):
    folder, relevant = _many_targets(tmp_path)
    monkeypatch.delenv("DIAGNOSE_DATA_ROOT", raising=False)
    monkeypatch.setenv("DIAGNOSE_DATA", str(folder))
    at = app.demo_app()
    app.assert_clean(at)
    mine = next(o for o in at.selectbox(key="run").options if o.startswith("mine"))
    at.selectbox(key="run").select(mine).run()
    app.open_page(at, "inspector")
    at.selectbox(key="inspector_query").select(QUERY).run()
    app.assert_clean(at)
    return at, relevant


def _cards(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("#### ")]


def test_a_query_with_many_targets_opens_the_worst_few_and_says_each_recommendation_once(
    tmp_path, monkeypatch
):
    at, relevant = _open_inspector(tmp_path, monkeypatch)
    assert len(relevant) == 1 + EXTRA == 9
    assert at.selectbox(key="inspector_query").value == QUERY
    # 9 targets, INSPECT_OPEN (3) of them cards; the other 6 are rows of the classes' compact tables
    assert len(_cards(at)) == defaults.INSPECT_OPEN
    rows = sum(
        len(d.value) for d in at.dataframe if "target" in d.value.columns and "grade" in d.value.columns
    )
    assert rows == 9 - defaults.INSPECT_OPEN
    # one "### class (n targets)" heading and one recommendation per class, none repeated
    groups = [m.value for m in at.markdown if m.value.startswith("### ")]
    recs = [i.value for i in at.info if i.value.startswith("**Recommendation.**")]
    assert 1 <= len(groups) == len(recs) == len(set(recs))
    assert sum(int(g.rsplit("(", 1)[1].split(" ")[0]) for g in groups) == 9


def test_the_show_all_toggle_opens_every_target(tmp_path, monkeypatch):
    at, _ = _open_inspector(tmp_path, monkeypatch)
    at.toggle(key="inspector_open_all").set_value(True).run()
    app.assert_clean(at)
    assert len(_cards(at)) == 9
    assert not [d for d in at.dataframe if "grade" in d.value.columns]


def test_the_map_says_whose_lines_it_draws():
    at = app.open_demo("map")
    captions = app.unescaped(" ".join(c.value for c in at.caption))
    assert "Lines of " in captions and " lines." in captions
    at.toggle(key="map_all_lines").set_value(True).run()
    app.assert_clean(at)
    assert "Lines of every failed query" in app.unescaped(" ".join(c.value for c in at.caption))


def test_the_overview_table_pins_the_run_column():
    at = app.open_demo("overview")
    table = next(d for d in at.dataframe if "run" in d.value.columns and "failed queries" in d.value.columns)
    config = json.loads(table.proto.columns)
    assert config["run"].get("pinned") is True
