"""Faster encoder routes for the bundled all-MiniLM-L6-v2 vs today's exact fp32 path, side by side in one run.

Usage (from the repository root; needs ../shared/data/nfcorpus, optionally ../shared/data/cacm):

    python -u bench/bench_fast_encode.py                          # ~10 min on 2 cores
    python -u bench/bench_fast_encode.py --ndcg nfcorpus cacm     # + CACM as a second collection
    python -u bench/bench_fast_encode.py --no-onnx                # torch routes only

What is measured:

- throughput: every route encodes the same --n-docs NFCorpus documents (title + " " + text, the texts the product
  embeds; biomedical abstracts like SciFact's, which is not on this machine) at batch 64. Repeats are interleaved
  (A, B, C, ... then B, C, ..., A: each repeat starts one route later), so load from other jobs on the shared cores
  hits every route alike; the table gives medians of --repeats of wall time and of process CPU time (all threads),
  and their ratios to exact;
- quality: cosine of each route's vectors to the exact vectors, over the whole sample (mean, min);
- retrieval: for the exact and the fast (default) encoder, the dense baseline of each collection in --ndcg (every
  document + every judged test query through ``embed_texts`` without a cache, ``diagnose.search.baselines.dense_run``,
  ``diagnose.metrics.evaluate``) and its nDCG@10, with the wall time of each whole-corpus encode.

Routes: exact (``load_encoder(precision="exact")``: sentence-transformers, fp32); fast (``load_encoder()``: the
transformer in bf16 with fused oneDNN linear layers, :mod:`diagnose.embed.fast`); the same in bf16 without the
fused layers; torch bf16 autocast around the exact model; fast with ``torch.set_num_threads(1)``; and, unless
--no-onnx or onnxruntime is missing, ONNX Runtime on a graph exported here with ``torch.onnx.export``
(transformer + mean pooling + normalisation, dynamic batch/sequence axes, eager attention so that ORT's BERT
fusions apply) and fused by ``onnxruntime.transformers.optimizer``: fp32, and int8 dynamic quantisation
(``onnxruntime.quantization.quantize_dynamic``, signed weights, unsigned activations: the VNNI layout)
per-channel and per-tensor.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from diagnose.embed import embed_texts, load_encoder  # noqa: E402
from diagnose.embed import fast as fast_encoder  # noqa: E402
from diagnose.io import load_dataset  # noqa: E402
from diagnose.metrics import evaluate  # noqa: E402
from diagnose.search.baselines import dense_run  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
Route = Callable[[list[str]], np.ndarray]


# ------------------------------------------------------------------------------------------------ ONNX routes


def export_onnx(st_model, folder: Path) -> dict[str, Path]:
    """Export the exact model's transformer + mean pooling + normalisation, fuse with ORT, quantise; -> paths."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    hf = copy.deepcopy(st_model[0].auto_model).eval()
    hf.set_attn_implementation("eager")  # the sdpa graph does not match ORT's attention fusion
    cfg = hf.config

    class Pooled(torch.nn.Module):
        def __init__(self, m) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            h = self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            v = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(v, p=2, dim=1)

    enc = st_model.tokenizer(["a probe sentence", "b"], padding=True, return_tensors="pt")
    paths = {"raw": folder / "model.onnx", "fp32": folder / "model-ort-fused.onnx"}
    t = time.perf_counter()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(hf),
            (enc["input_ids"], enc["attention_mask"]),
            str(paths["raw"]),
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            opset_version=17,
            dynamic_axes={
                "input_ids": {0: "b", 1: "s"},
                "attention_mask": {0: "b", 1: "s"},
                "embedding": {0: "b"},
            },
        )
    t_export = time.perf_counter() - t
    t = time.perf_counter()
    opt = optimizer.optimize_model(
        str(paths["raw"]),
        model_type="bert",
        num_heads=cfg.num_attention_heads,
        hidden_size=cfg.hidden_size,
        opt_level=1,
    )
    opt.save_model_to_file(str(paths["fp32"]))
    fused = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
    t_fuse = time.perf_counter() - t
    t = time.perf_counter()
    for key, per_channel in (("int8-pc", True), ("int8-pt", False)):
        paths[key] = folder / f"model-{key}.onnx"
        quantize_dynamic(
            str(paths["fp32"]),
            str(paths[key]),
            per_channel=per_channel,
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    t_quant = time.perf_counter() - t
    print(
        f"ONNX: torch.onnx.export {t_export:.1f} s, ORT BERT fusion {t_fuse:.1f} s ({fused}), "
        f"2 dynamic quantisations {t_quant:.1f} s"
    )
    return paths


def ort_route(path: Path, tokenizer, max_len: int, batch_size: int) -> Route:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # fair on shared cores (no busy-wait)
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), 384), np.float32)
        for i in range(0, len(texts), batch_size):
            idx = order[i : i + batch_size]
            b = tokenizer(
                [texts[j] for j in idx],
                padding=True,
                truncation=True,
                max_length=max_len,
                return_tensors="np",
            )
            feed = {
                "input_ids": b["input_ids"].astype(np.int64),
                "attention_mask": b["attention_mask"].astype(np.int64),
            }
            out[idx] = sess.run(None, feed)[0]
        return out

    return encode


# ------------------------------------------------------------------------------------------------ helpers


def texts_of(name: str) -> tuple[list[str], list[str], list[str], list[str], object]:
    ds = load_dataset(data_dir=DATA / name)
    text_of = ds.queries.text_of()
    qids = [q for q in ds.qrels.queries_with_relevant() if q in text_of]
    return list(ds.corpus.ids), ds.corpus.texts(), qids, [text_of[q] for q in qids], ds.qrels


def padding_share(lengths: list[int], batch_size: int, sort: bool) -> float:
    """Share of the token slots in padded batches that are real tokens."""
    lens = sorted(lengths, reverse=True) if sort else list(lengths)
    slots = sum(
        max(lens[i : i + batch_size]) * len(lens[i : i + batch_size]) for i in range(0, len(lens), batch_size)
    )
    return sum(lens) / slots


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-docs", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--no-onnx", action="store_true")
    ap.add_argument(
        "--ndcg", nargs="*", default=["nfcorpus"], help="collections under ../shared/data (BEIR layout)"
    )
    return ap.parse_args()


def load_encoders() -> tuple:
    """The exact encoder, the fast one, and the fast one's bf16 model without the fused oneDNN layers, all
    loaded."""
    exact = load_encoder(None, precision="exact")
    fast = load_encoder(None)
    assert isinstance(fast, fast_encoder.FastEncoder), f"fast path unavailable here: {fast!r}"
    # the same bf16 model with torch's public layers only (what a torch release not in onednn.TESTED_TORCH gets)
    plain = fast_encoder.FastEncoder(load_encoder(None, precision="exact"), fuse=False)
    plain.model  # noqa: B018 - load (and convert) now
    exact.model  # noqa: B018
    fast.model  # noqa: B018
    return exact, fast, plain


def describe(sample: list[str], st, fast, bs: int, threads: int, load0: tuple[float, float, float]) -> None:
    """The machine and encoder line, then the sample's word pieces and padding."""
    import torch

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} ({threads} threads), "
        f"load average {load0[0]:.1f}; fast encoder {fast.name}, fused layers {fast.fused}"
    )
    tok_lens = [min(len(st.tokenizer(t)["input_ids"]), st.max_seq_length) for t in sample]
    print(
        f"sample: {len(sample)} NFCorpus docs, word pieces (cut at {st.max_seq_length}) median "
        f"{statistics.median(tok_lens):.0f}, {sum(n >= st.max_seq_length for n in tok_lens)} cut; real tokens per "
        f"padded slot at batch {bs}: {padding_share(tok_lens, bs, sort=True):.3f} sorted by length (what "
        f"sentence-transformers and embed_texts do) vs {padding_share(tok_lens, bs, sort=False):.3f} in input order"
    )


def torch_routes(exact, fast, plain, bs: int, threads: int) -> dict[str, Route]:
    """The torch routes by label, exact first (the reference of the table)."""
    import torch

    def autocast(texts: list[str]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return exact.encode(texts, batch_size=bs)

    def one_thread(texts: list[str]) -> np.ndarray:
        torch.set_num_threads(1)
        try:
            return fast.encode(texts, batch_size=bs)
        finally:
            torch.set_num_threads(threads)

    return {
        "exact: fp32, sentence-transformers (`--precision exact`)": lambda x: exact.encode(x, batch_size=bs),
        "**fast: bf16 + fused oneDNN layers (default)**": lambda x: fast.encode(x, batch_size=bs),
        "bf16 weights, no fused layers": lambda x: plain.encode(x, batch_size=bs),
        "torch bf16 autocast over the fp32 model": autocast,
        "fast, torch.set_num_threads(1)": one_thread,
    }


def add_onnx_routes(routes: dict[str, Route], st, bs: int, folder: Path) -> None:
    """Adds the ONNX Runtime routes (fp32, int8 per-channel and per-tensor) exported into ``folder``, or says why
    they are skipped."""
    try:
        import onnxruntime

        paths = export_onnx(st, folder)
        for key, label in (
            ("fp32", "ONNX Runtime fp32 (exported + ORT BERT fusion)"),
            ("int8-pc", "ONNX Runtime int8 dynamic, per-channel"),
            ("int8-pt", "ONNX Runtime int8 dynamic, per-tensor"),
        ):
            routes[f"{label}, ort {onnxruntime.__version__}"] = ort_route(
                paths[key], st.tokenizer, st.max_seq_length, bs
            )
    except ImportError as e:
        print(f"ONNX routes skipped: {e}")


def measure(
    routes: dict[str, Route], sample: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, np.ndarray]]:
    """Wall and CPU seconds of every route per repeat (interleaved: each repeat starts one route later, after one
    warm-up each), and each route's last vectors."""
    for f in routes.values():  # warm-up
        f(sample[:16])
    wall: dict[str, list[float]] = {k: [] for k in routes}
    cpu: dict[str, list[float]] = {k: [] for k in routes}
    vecs: dict[str, np.ndarray] = {}
    names = list(routes)
    for r in range(repeats):
        for k in names[r % len(names) :] + names[: r % len(names)]:  # each repeat starts one route later
            f = routes[k]
            gc.collect()
            t, c = time.perf_counter(), time.process_time()
            vecs[k] = f(sample)
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
            print(f"  repeat {r + 1}: {k}: {wall[k][-1]:.1f} s", flush=True)
    return wall, cpu, vecs


def print_throughput(
    n: int, wall: dict[str, list[float]], cpu: dict[str, list[float]], vecs: dict[str, np.ndarray]
) -> None:
    """The throughput table of ``n`` documents: every route against the first one (exact)."""
    ref_key = next(iter(wall))
    ref = vecs[ref_key]
    mw, mc = statistics.median(wall[ref_key]), statistics.median(cpu[ref_key])
    print(
        "\n| route | docs/s (wall) | vs exact (wall) | per-repeat wall ratios | docs per CPU-s | vs exact (CPU) "
        "| cosine to exact: mean | min |\n|---|---:|---:|---|---:|---:|---:|---:|"
    )
    for k in wall:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        cos = (vecs[k] * ref).sum(axis=1)
        per = ", ".join(f"{a / b:.2f}" for a, b in zip(wall[ref_key], wall[k], strict=True))
        print(
            f"| {k} | {n / w:.1f} | {mw / w:.2f}x | {per} | {n / c:.1f} | {mc / c:.2f}x "
            f"| {cos.mean():.5f} | {cos.min():.5f} |"
        )


def print_ndcg(collections: list[str], exact, fast, bs: int) -> None:
    """The retrieval table: nDCG@10 of the exact and the fast dense baseline of each collection."""
    if collections:
        print(
            "\n| collection | docs | judged queries | encoder | whole-corpus encode s (wall) | docs/s | nDCG@10 "
            "| difference |\n|---|---:|---:|---|---:|---:|---:|---:|"
        )
    for name in collections:
        doc_ids, doc_texts, qids, q_texts, qrels = texts_of(name)
        scores = {}
        for label, enc in (("exact", exact), ("fast (bf16)", fast)):
            t = time.perf_counter()
            d = embed_texts(enc, doc_texts, cache=None, batch_size=bs)
            secs = time.perf_counter() - t
            q = embed_texts(enc, q_texts, cache=None, batch_size=bs)
            run = dense_run(d, q, doc_ids, qids, depth=100, name=label)
            scores[label] = evaluate(qrels, run, ["ndcg@10"]).aggregate["ndcg@10"]
            diff = "" if label == "exact" else f"{scores[label] - scores['exact']:+.4f}"
            print(
                f"| {name} | {len(doc_texts):,} | {len(qids)} | {label} | {secs:.1f} | {len(doc_texts) / secs:.1f} "
                f"| {scores[label]:.4f} | {diff} |",
                flush=True,
            )


def main() -> None:
    args = parse_args()
    bs = args.batch_size

    import torch

    load0 = os.getloadavg()
    _, corpus_texts, _, _, _ = texts_of("nfcorpus")
    sample = corpus_texts[: args.n_docs]
    exact, fast, plain = load_encoders()
    st = exact.model
    threads = torch.get_num_threads()
    describe(sample, st, fast, bs, threads, load0)
    routes = torch_routes(exact, fast, plain, bs, threads)
    tmp = tempfile.TemporaryDirectory()
    if not args.no_onnx:
        add_onnx_routes(routes, st, bs, Path(tmp.name))
    wall, cpu, vecs = measure(routes, sample, args.repeats)
    print_throughput(len(sample), wall, cpu, vecs)
    print(f"load average at the end of the throughput runs: {os.getloadavg()[0]:.1f}")
    tmp.cleanup()
    print_ndcg(args.ndcg, exact, fast, bs)
    print(f"load average: start {load0[0]:.1f}, end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
