"""Small corpora for retrieval tests: source documents with the metadata filters act on."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from rag.acl import Scope, user_hash
from rag.models import Project
from rag.search import chunk_search
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit

TOPICS = {
    "closures": (
        "JavaScript closures",
        "A closure is a function bundled with its lexical environment. Inner functions keep access "
        "to the variables of the outer function after it has returned.",
    ),
    "promises": (
        "Promises and async",
        "A promise represents the eventual result of an asynchronous operation. Use then, catch "
        "and await to react when it settles.",
    ),
    "hooks": (
        "React hooks",
        "useState and useEffect let function components hold state and run side effects after "
        "rendering. Hooks must be called in the same order on every render.",
    ),
    "sql": (
        "PostgreSQL indexes",
        "A B-tree index speeds up equality and range lookups. GIN indexes serve full-text search "
        "over tsvector columns and array containment.",
    ),
    "vectors": (
        "Vector similarity search",
        "HNSW graphs find approximate nearest neighbours of an embedding quickly; cosine distance "
        "compares the direction of two vectors.",
    ),
    "mitochondria": (
        "Cell biology",
        "Mitochondria produce most of the cell's ATP through oxidative phosphorylation, and they "
        "carry their own small circular genome.",
    ),
}


def doc(
    source_id: str,
    title: str,
    content: str,
    *,
    collection: str = "course_content",
    source_type: str = "page",
    units: int = 1,
    visibility: str = "public",
    project: str | None = None,
    owner_hash: str = "",
    **unit_fields,
) -> SourceDocument:
    return SourceDocument(
        collection=collection,
        source_type=source_type,
        source_id=source_id,
        visibility=visibility,
        project=project,
        owner_hash=owner_hash,
        units=[
            Unit(
                unit_anchor=f"u{i}", title=title, content=content if i == 0 else f"{content} (part {i + 1})",
                **unit_fields,
            )
            for i in range(units)
        ],
    )


def topic_corpus() -> list[SourceDocument]:
    """Six topics with distinct metadata, so each filter selects a known subset."""
    meta = {
        "closures": dict(
            domain="javascript", concepts=["closures", "scope"], code_languages=["javascript"],
            date=dt.date(2024, 1, 10),
        ),
        "promises": dict(
            domain="javascript", concepts=["async"], code_languages=["javascript"], has_image=True,
            date=dt.date(2024, 3, 5),
        ),
        "hooks": dict(
            domain="react", concepts=["hooks", "state"], mnemonic_tags=["fishing-hook"], has_image=True,
            date=dt.date(2024, 6, 1),
        ),
        "sql": dict(domain="postgres", concepts=["indexes"], code_languages=["sql"], date=dt.date(2025, 2, 1)),
        "vectors": dict(
            domain="postgres", concepts=["indexes", "embeddings"], mnemonic_tags=["compass"], date=dt.date(2025, 5, 20)
        ),
        "mitochondria": dict(domain="biology", concepts=["cells"], date=None),
    }
    docs = []
    for key, (title, content) in TOPICS.items():
        collection = "mnemonics" if key in ("hooks", "vectors") else "course_content"
        source_type = "note" if key == "mitochondria" else "page"
        docs.append(doc(key, title, content, collection=collection, source_type=source_type, **meta[key]))
    return docs


def load(documents: list[SourceDocument], embedder) -> None:
    result = chunk_upsert(documents=documents, embedder=embedder)
    assert not result.errors, result.errors


def load_visibility_corpus(member, owner, embedder) -> None:
    """One public, one restricted (project "secret", ``member`` in it) and one private chunk
    (``owner``'s), all about "knowledge vectors": who sees which is the whole ACL."""
    project = Project.objects.create(slug="secret", name="Secret")
    project.members.add(member)
    load(
        [
            doc("open", "Open", "shared knowledge about vectors"),
            doc("closed", "Closed", "secret knowledge about vectors", visibility="restricted", project="secret"),
            doc(
                "mine", "Mine", "private knowledge about vectors", visibility="private",
                owner_hash=user_hash(owner.pk),
            ),
        ],
        embedder,
    )


def visible_sources(user, embedder, mode: str) -> set[str]:
    """The source ids ``user``'s search of the visibility corpus returns in ``mode``."""
    result = chunk_search(query="knowledge vectors", scope=Scope.for_user(user), mode=mode, embedder=embedder)
    return {h.source_id for h in result.hits}


def beir_folder(
    folder: Path,
    *,
    corpus: dict[str, tuple[str, str]],
    queries: dict[str, tuple[str, dict[str, int]]],
    split: str = "test",
    unjudged: dict[str, str] | None = None,
) -> Path:
    """Write a BEIR folder: ``corpus`` id → (title, text), ``queries`` id → (text, {doc id: grade}),
    ``unjudged`` id → text of queries with no qrels line."""
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as fh:
        for _id, (title, text) in corpus.items():
            fh.write(json.dumps({"_id": _id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w") as fh:
        for _id, text in [(q, text) for q, (text, _) in queries.items()] + list((unjudged or {}).items()):
            fh.write(json.dumps({"_id": _id, "text": text}) + "\n")
    with (folder / "qrels" / f"{split}.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for _id, (_, rels) in queries.items():
            for doc_id, grade in rels.items():
                fh.write(f"{_id}\t{doc_id}\t{grade}\n")
    return folder
