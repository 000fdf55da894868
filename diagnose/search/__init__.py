"""The runs computed here: the vector space, the baselines (BM25, dense, hybrid), fusion, the cosine rerank."""
