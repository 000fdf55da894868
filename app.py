"""Streamlit entry point: `streamlit run app.py`. A small router over the pages in diagnose/ui/."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="diagnose: why your retriever fails", layout="wide")
st.title("diagnose")
st.write("The app is being built; see the README for the CLI.")
