"""HTML pages of the rag app: the ask page at ``/`` and the document view."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from rag.acl import Scope
from rag.answering.conversations import CONVERSATION_ID_RE
from rag.answering.history import conversation_exists
from rag.answering.selectors import facet_values
from rag.answering.sources import collection_label
from rag.documents import document_for_chunk
from rag.llm import available_models, default_model_id


@login_required
def ask_page(request):
    """Question box, filters from the caller's facets, model choice, the history list; the answer
    streams in via JS. ``?c=<id>`` reopens one of the caller's conversations."""
    facets = facet_values(scope=Scope.for_user(request.user)).as_dict()
    # Collections by a name a person reads ("Course content"); the form still sends the value.
    facets["collections"] = [{**c, "label": collection_label(c["value"])} for c in facets["collections"]]
    conversation_id, missing = "", False
    requested = request.GET.get("c", "")
    if requested:
        if CONVERSATION_ID_RE.match(requested) and conversation_exists(user=request.user, conversation_id=requested):
            conversation_id = requested  # the page's script reads its turns from the API
        else:
            missing = True
    return render(
        request,
        "rag/ask.html",
        {
            "facets": facets,
            "models": [m.as_dict() for m in available_models()],
            "default_model": default_model_id(),
            "conversation_id": conversation_id,
            "conversation_missing": missing,
        },
    )


@login_required
def document_page(request, chunk_uid: str):
    """A source's whole document: its chunks in order (the cited one marked), metadata, versions."""
    doc = document_for_chunk(scope=Scope.for_user(request.user), chunk_uid=chunk_uid)
    if doc is None:
        raise Http404("No such document.")
    return render(
        request,
        "rag/document.html",
        {
            "doc": doc, "original_url": doc.url, "original_label": _original_label(doc.url, doc.metadata),
            "properties": _properties(doc.metadata), "file": _file(doc.metadata),
            "ocr": any(c.ocr for c in doc.chunks),
        },
    )


def _file(metadata: dict) -> dict | None:
    """An uploaded file's name and size, for its download link."""
    info = (metadata or {}).get("file")
    if not isinstance(info, dict) or not info.get("name"):
        return None
    size = int(info.get("size") or 0)
    human = f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{max(size // 1024, 1)} KB"
    return {"name": str(info["name"]), "size": human}


def _original_label(url: str, metadata: dict | None = None) -> str:
    if _file(metadata or {}) and url.startswith("/"):
        return "Download the original"
    if url.startswith("logseq://"):
        return "Open in Logseq"
    if url.startswith("notion://") or "notion.so/" in url:
        return "Open in Notion"
    return "Open the original"


def _properties(metadata: dict) -> list[tuple[str, str]]:
    """The metadata a reader cares about (people, tags, …), as short text; nested values skipped."""
    out = []
    for key, value in sorted((metadata or {}).items()):
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value) and value:
            out.append((key.replace("_", " "), ", ".join(str(v) for v in value)))
        elif isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            out.append((key.replace("_", " "), str(value)[:300]))
    return out[:20]
