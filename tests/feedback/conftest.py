"""Fixtures of the feedback tests: a small real corpus, and interactions made the way search makes them."""

from __future__ import annotations

import pytest

from feedback.services import interaction_record
from rag.acl import Scope
from rag.search import SearchFilters, chunk_search
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit

COLLECTION = "fbtest"

DOCS = {
    "closures-guide": (
        "JavaScript closures",
        "A closure is a function that remembers the variables of the scope it was created in, even after that "
        "outer function has returned. Closures in JavaScript power private state and callbacks.",
    ),
    "closures-faq": (
        "Closures FAQ",
        "Frequently asked questions about closures in JavaScript: why a closure keeps a reference to outer "
        "variables, closures in loops, and memory use of closures.",
    ),
    "scope-chain": (
        "Scope and the scope chain",
        "JavaScript resolves variable names through the lexical scope chain: block scope, function scope and the "
        "global scope. Closures capture this chain.",
    ),
    "promises": (
        "Promises and async/await",
        "A promise represents a value that arrives later. async functions return promises and await pauses until "
        "they settle.",
    ),
    "react-hooks": (
        "React hooks",
        "Hooks such as useState and useEffect let React function components hold state and run side effects.",
    ),
    "css-grid": (
        "CSS grid layout",
        "CSS grid places items into rows and columns with grid-template-columns and grid-gap.",
    ),
    "sourdough": (
        "Sourdough bread",
        "Feed the starter, mix flour and water, let the dough rise overnight and bake it in a hot Dutch oven.",
    ),
    "board-meeting": (
        "Board meeting schedule",
        "The board meets on the first Tuesday of every quarter; the next board meeting is in March.",
    ),
    "password-reset": (
        "Resetting your password",
        "To reset your password open Settings, choose Security and follow the link sent by email.",
    ),
    "python-decorators": (
        "Python decorators",
        "A decorator wraps a function; it is itself built from a closure over the wrapped function.",
    ),
}


def make_docs(collection: str = COLLECTION) -> list[SourceDocument]:
    return [
        SourceDocument(
            collection=collection,
            source_type="doc",
            source_id=sid,
            units=[Unit(unit_anchor="main", title=title, content=text)],
        )
        for sid, (title, text) in DOCS.items()
    ]


def uid(source_id: str, collection: str = COLLECTION) -> str:
    return f"{collection}:doc:{source_id}:main:0"


@pytest.fixture
def real_corpus(db, local_embedder):
    """The corpus embedded with the real model: for tests about ranking."""
    chunk_upsert(documents=make_docs(), embedder=local_embedder)
    return local_embedder


@pytest.fixture
def hashed_corpus(db, hashing_embedder):
    """The corpus embedded with the hashing stand-in: for tests about permissions, idempotency,
    validation and exports, where embedding quality is beside the point."""
    chunk_upsert(documents=make_docs(), embedder=hashing_embedder)
    return hashing_embedder


def search(query: str, embedder, *, user=None, top_k: int = 8, **kw):
    scope = Scope.for_user(user) if user is not None else Scope.everything()
    return chunk_search(
        query=query,
        scope=scope,
        filters=SearchFilters(collections=[COLLECTION]),
        top_k=top_k,
        query_vector=embedder.embed_query(query),
        embedder=embedder,
        **kw,
    )


def record(query: str, embedder, *, user=None, top_k: int = 5, kind: str = "query"):
    """Search and log the interaction, as /rag/query does."""
    result = search(query, embedder, user=user, top_k=top_k)
    return interaction_record(
        user=user,
        kind=kind,
        query=query,
        filters=result.filters.as_dict(),
        hits=result.hits,
        answer="An answer." if kind == "ask" else "",
    )
