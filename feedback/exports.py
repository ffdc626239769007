"""Write the labelled set to disk (or a zip): JSONL, or a BEIR folder ``manage.py evaluate`` reads."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from feedback.selectors import judgments_export_jsonl, judgments_export_qrels


def _beir_files(*, interactions=None, corpus: str = "judged", include_pii: bool = False):
    queries, qrels, corpus_rows = judgments_export_qrels(
        interactions=interactions, corpus=corpus, include_pii=include_pii
    )
    yield "queries.jsonl", (json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    yield "qrels/test.tsv", (
        line for line in ["query-id\tcorpus-id\tscore\n", *(f"{q}\t{c}\t{s}\n" for q, c, s in qrels)]
    )
    if corpus != "none":
        yield "corpus.jsonl", (json.dumps(row, ensure_ascii=False) + "\n" for row in corpus_rows)


def write_beir_dir(
    out: Path, *, interactions=None, corpus: str = "judged", include_pii: bool = False
) -> dict[str, int]:
    """Write ``queries.jsonl``, ``qrels/test.tsv`` and (unless ``corpus="none"``) ``corpus.jsonl``."""
    out = Path(out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, lines in _beir_files(interactions=interactions, corpus=corpus, include_pii=include_pii):
        n = 0
        with (out / name).open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line)
                n += 1
        counts[name] = n - 1 if name.endswith(".tsv") else n
    return counts


def write_beir_zip(archive: zipfile.ZipFile, *, interactions=None, corpus: str = "judged") -> None:
    for name, lines in _beir_files(interactions=interactions, corpus=corpus):
        archive.writestr(f"judgments-beir/{name}", "".join(lines))


def write_jsonl(path: Path, *, interactions=None, include_pii: bool = False) -> int:
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for line in judgments_export_jsonl(interactions=interactions, include_pii=include_pii):
            fh.write(line + "\n")
            n += 1
    return n
