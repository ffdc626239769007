"""Admin-managed content → the index: pages, imagimodels, reflections."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from ingestion.models import (
    Imagimodel,
    IngestRun,
    Page,
    Reflection,
)
from ingestion.services.core import (
    Running,
    RunRecorder,
    index_documents,
    live_source_ids,
    run_create,
    sources_remove,
)
from ingestion.sources import cms as source
from rag.embeddings import Embedder
from rag.models import Chunk
from rag.units import SourceDocument

logger = logging.getLogger(__name__)

# --- admin-managed content ----------------------------------------------------------------------


@dataclass(frozen=True)
class CmsKind:
    name: str
    model: type
    collection: str
    source_type: str
    shape: Callable
    published_only: bool


CMS = {
    "pages": CmsKind("pages", Page, source.COURSE_COLLECTION, source.PAGE_TYPE, source.page_document, True),
    "imagimodels": CmsKind(
        "imagimodels", Imagimodel, source.MNEMONIC_COLLECTION, source.IMAGIMODEL_TYPE, source.imagimodel_document, True
    ),
    "reflections": CmsKind(
        "reflections", Reflection, source.REFLECTION_COLLECTION, source.REFLECTION_TYPE,
        source.reflection_document, False,
    ),  # fmt: skip
}


def _cms_queryset(kind: CmsKind):
    if kind.name == "pages":
        return Page.objects.select_related("subchapter__chapter__course").prefetch_related("blocks")
    if kind.name == "imagimodels":
        return Imagimodel.objects.select_related("course").prefetch_related("layers", "zones")
    return Reflection.objects.select_related("page__subchapter__chapter__course")


def _changed_since(kind: CmsKind, since: dt.datetime) -> Q:
    if kind.name == "pages":
        return (
            Q(updated_at__gte=since) | Q(blocks__updated_at__gte=since) | Q(subchapter__updated_at__gte=since)
            | Q(subchapter__chapter__updated_at__gte=since) | Q(subchapter__chapter__course__updated_at__gte=since)
        )  # fmt: skip
    if kind.name == "imagimodels":
        return (
            Q(updated_at__gte=since) | Q(layers__updated_at__gte=since) | Q(zones__updated_at__gte=since)
            | Q(course__updated_at__gte=since)
        )  # fmt: skip
    return Q(updated_at__gte=since)


def _is_published(kind: CmsKind, obj) -> bool:
    if not kind.published_only:
        return True
    if kind.name == "pages":
        course = obj.subchapter.chapter.course
        return obj.is_published and course.is_published
    return obj.is_published


def sync_cms(
    *, kind: str, recorder: RunRecorder, ids: list[int] | None = None, since: dt.datetime | None = None,
    dry_run: bool = False, prune: bool = False, embedder: Embedder | None = None, raise_transient: bool = False,
    progress: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    """Index published objects of one CMS kind; take unpublished and vanished ones out of search.

    With ``ids`` (an admin save or delete), ids that no longer exist are deleted outright.
    Without, the whole kind is reconciled: unpublished and vanished objects are soft-deleted,
    or deleted for good with ``prune``.
    """
    spec = CMS[kind]
    qs = _cms_queryset(spec)
    if ids is not None:
        qs = qs.filter(pk__in=ids)
    if since is not None:
        qs = qs.filter(_changed_since(spec, since)).distinct()
    documents: list[SourceDocument] = []
    hidden: list[str] = []
    seen: set[str] = set()
    objects = list(qs)
    recorder.count(total=len(objects))
    for obj in objects:
        seen.add(str(obj.pk))
        recorder.count(sources=1)
        if not _is_published(spec, obj):
            hidden.append(str(obj.pk))
            continue
        try:
            doc = spec.shape(obj)
        except Exception as exc:
            logger.exception("could not shape %s %s", kind, obj.pk)
            recorder.fail(f"{spec.collection}:{spec.source_type}:{obj.pk}", f"{type(exc).__name__}: {exc}")
            continue
        documents.append(doc)
    index_documents(
        documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder,
        raise_transient=raise_transient, progress=progress,
    )  # fmt: skip
    sources_remove(
        collection=spec.collection, source_type=spec.source_type, source_ids=hidden, hard=prune,
        dry_run=dry_run, recorder=recorder,
    )  # fmt: skip
    if ids is not None:
        gone = [str(i) for i in ids if str(i) not in seen and not spec.model.objects.filter(pk=i).exists()]
        sources_remove(
            collection=spec.collection, source_type=spec.source_type, source_ids=gone, hard=True,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip
    elif since is None:
        existing = {str(pk) for pk in spec.model.objects.values_list("pk", flat=True)}
        orphans = sorted(live_source_ids(spec.collection, spec.source_type) - existing)
        if prune:
            orphans = sorted(
                set(Chunk.objects.filter(collection=spec.collection, source_type=spec.source_type)
                    .values_list("source_id", flat=True).distinct()) - existing
            )  # fmt: skip
        sources_remove(
            collection=spec.collection, source_type=spec.source_type, source_ids=orphans, hard=prune,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip


def cms_reindex_objects(
    *, kind: str, ids: list[int], embedder: Embedder | None = None, raise_transient: bool = False,
) -> IngestRun:  # fmt: skip
    """Re-index a few CMS objects (after an admin save/delete): a small recorded run."""
    run = run_create(source="admin", types=[kind], options={"ids": ids})
    with Running(run) as recorder:
        sync_cms(kind=kind, recorder=recorder, ids=ids, embedder=embedder, raise_transient=raise_transient)
    return run


def page_ids_for(obj) -> list[int]:
    """The pages whose chunks depend on a course, chapter, subchapter or page (breadcrumb, domain)."""
    from ingestion.models import Chapter, Course, Subchapter

    if isinstance(obj, Page):
        return [obj.pk]
    if isinstance(obj, Subchapter):
        return list(obj.pages.values_list("pk", flat=True))
    if isinstance(obj, Chapter):
        return list(Page.objects.filter(subchapter__chapter=obj).values_list("pk", flat=True))
    if isinstance(obj, Course):
        return list(Page.objects.filter(subchapter__chapter__course=obj).values_list("pk", flat=True))
    return []


def cms_targets(obj) -> list[tuple[str, list[int]]]:
    """(kind, ids) to re-index when ``obj`` is saved or deleted in the admin."""
    from ingestion.models import Course

    targets: list[tuple[str, list[int]]] = []
    pages = page_ids_for(obj)
    if pages:
        targets.append(("pages", pages))
    if isinstance(obj, Imagimodel):
        targets.append(("imagimodels", [obj.pk]))
    if isinstance(obj, Course):
        model_ids = list(Imagimodel.objects.filter(course=obj).values_list("pk", flat=True))
        if model_ids:
            targets.append(("imagimodels", model_ids))
    if isinstance(obj, Reflection):
        targets.append(("reflections", [obj.pk]))
    if isinstance(obj, Page):
        reflection_ids = list(obj.reflections.values_list("pk", flat=True))
        if reflection_ids:
            targets.append(("reflections", reflection_ids))
    return targets


def cms_enqueue(targets: list[tuple[str, list[int]]]) -> None:
    """Queue re-indexing of ``targets`` once the current transaction commits."""
    from ingestion.tasks import reindex_objects

    for kind, ids in targets:
        if ids:
            transaction.on_commit(lambda k=kind, i=list(ids): reindex_objects.delay(k, i), robust=True)
