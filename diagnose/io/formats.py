"""What each reader accepts: the format descriptions quoted in messages (``Expected ...``) and the column, header
and JSON key names recognised for ids and text."""

CORPUS_FORMATS = (
    'a BEIR corpus.jsonl ({"_id", "title", "text"} per line), a CSV/TSV/Parquet table with id and text '
    "columns, or a folder of .txt/.md files"
)
QUERIES_FORMATS = (
    'a BEIR queries.jsonl ({"_id", "text"} per line), a TSV file id<TAB>text, or a CSV/Parquet table'
)
QRELS_FORMATS = (
    'a BEIR qrels TSV with header "query-id corpus-id score", a TREC qrels file "qid iter docid rel", or JSONL '
    '{"query_id": .., "relevant": {"doc_id": grade, ..}}'
)
RUN_FORMATS = (
    'a TREC run "qid Q0 docid rank score tag" (.gz allowed), JSONL {"query_id": .., "results": [{"doc_id": '
    '..,"score": ..}, ..]} or {"query_id": .., "doc_ids": [..]}, or CSV with header query_id,doc_id,score[,rank]'
)

TREC_RUN = 'TREC run lines "qid Q0 docid rank score tag" (6 whitespace-separated fields)'
TREC_QRELS = 'TREC qrels lines "qid iter docid rel" (4 whitespace-separated fields, integer rel)'
BEIR_QRELS = 'BEIR qrels lines "query-id<TAB>corpus-id<TAB>score" (integer score)'

CORPUS_ID_FIELDS = ("_id", "id", "doc_id", "docid")
CORPUS_TEXT_FIELDS = ("text", "body", "content", "contents")
CORPUS_TITLE_FIELDS = ("title",)
QUERY_ID_FIELDS = ("_id", "id", "query_id", "qid")
QUERY_TEXT_FIELDS = ("text", "query", "question")

QRELS_Q_HEADER = {"query-id", "query_id", "qid", "queryid", "query"}
QRELS_D_HEADER = {"corpus-id", "corpus_id", "doc-id", "doc_id", "docid", "docno", "doc"}
RUN_Q_COLS = ("query_id", "qid", "query-id", "queryid")
RUN_D_COLS = ("doc_id", "docid", "corpus_id", "corpus-id", "docno")
JSON_Q_KEYS = ("query_id", "qid", "query-id")
JSON_D_KEYS = ("doc_id", "docid", "id", "corpus_id")
