"""Similarity: cosine(query, relevant document) for the relevant documents the run found vs missed, per model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.ui import state
from diagnose.ui.text import escape_md

b = state.bundle()
state.wait_for_vectors(b, "Similarity", "The Similarity page")
run_name = b.selected_run
k = b.k
seed = b.analysis.thresholds.seed_cosine

st.title("Similarity")
st.caption(
    f"cos(query, relevant document) for every (golden query, relevant document) pair: **hit** = the run "
    f"{escape_md(run_name)} has the document in its top {k}, **miss** = it does not. The seed rule calls a miss "
    f"with cosine below {seed:.2f} a vocabulary mismatch; the calibrated threshold is this model's 10th percentile "
    f"of the hits, because {seed:.2f} means different things for different models."
)

spaces = state.spaces_for(b)
labels = list(spaces)
if len(labels) > 1:
    chosen = st.multiselect(
        "Models (every model encoded in this session)", labels, default=labels[:1], key="sim_models"
    )
else:
    chosen = labels
    st.caption(
        "Pick another model in the sidebar to add it here: every model encoded in this session is offered."
    )

frames, thresholds = [], []
for label in chosen:
    space = spaces[label]
    frames.append(b.analysis.similarity_frame(run_name, k=k, spaces={label: space}))
    cal = b.analysis.calibration(run_name, k=k, space=space)
    thresholds.append(
        {
            "model": label,
            "seed": cal.seed,
            "calibrated": cal.calibrated,
            "pairs": cal.n_pairs,
            "fallback": cal.fallback,
        }
    )
data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
if data.empty:
    st.info("No (query, relevant document) pair has vectors to compare.")
    st.stop()

chart = charts.similarity_histogram(
    data,
    seed_threshold=thresholds[0]["seed"],
    calibrated_threshold={t["model"]: t["calibrated"] for t in thresholds},
)
st.altair_chart(chart, width="stretch", height=420 if len(chosen) == 1 else 320 * len(chosen))
for t in thresholds:
    sub = data[data["model"] == t["model"]]
    found, missed = sub[sub["outcome"] == "hit"], sub[sub["outcome"] == "miss"]
    below_seed = int((missed["cosine"] < t["seed"]).sum())
    below_cal = int((missed["cosine"] < t["calibrated"]).sum())
    note = " (too few hits to calibrate: the seed threshold is used)" if t["fallback"] else ""
    st.markdown(
        f"**{escape_md(t['model'])}**: calibrated threshold **{t['calibrated']:.3f}**{note} from {t['pairs']} hits, "
        f"seed {t['seed']:.2f}. Of {len(missed)} misses, {below_seed} fall below {t['seed']:.2f} and {below_cal} "
        f"below the calibrated threshold. Median cosine of the hits {found['cosine'].median():.3f}"
        + (f", of the misses {missed['cosine'].median():.3f}." if len(missed) else ".")
    )
