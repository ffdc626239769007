"""Admin-managed content: the CMS source, reindex idempotency, unpublishing, dry runs, failures, ACL."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from ingestion import services
from ingestion.models import ContentBlock, IngestRun, Reflection
from ingestion.sources import cms
from rag.acl import Scope, user_hash
from rag.models import Chunk
from tests.ingestion import factories
from tests.ingestion.conftest import live_chunks, search_ids

pytestmark = pytest.mark.django_db


def test_page_shaper_builds_breadcrumb_domain_code_languages_and_images():
    course, _, sub = factories.course_tree(canon=False)
    page = factories.page(sub)
    doc = cms.page_document(page)
    assert doc.key == ("course_content", "page", str(page.pk))
    units = {u.metadata["block_kind"]: u for u in doc.units}
    assert set(units) == {"text", "text_image_code", "code_editor"}
    for unit in doc.units:
        assert unit.breadcrumb == f"{course.title} > Functions > JavaScript > Closures"
        assert unit.domain == course.slug  # non-canon course: domain = course slug
        assert unit.concepts == ["closures", "scope"]
    rich = units["text_image_code"]
    assert rich.has_image and rich.code_languages == ["javascript"]  # "js" normalised
    assert "Diagram of a counter closure" in rich.content and "Image type: diagram" in rich.content
    assert "let count = 0" in rich.content
    editor = units["code_editor"]
    assert editor.code_languages == ["html", "javascript"]  # from file extension and explicit language
    assert "File counter.js" in editor.content and not editor.has_image
    assert not units["text"].has_image and units["text"].code_languages == []


def test_canon_course_domain_is_the_slugified_subchapter_title():
    _, _, sub = factories.course_tree(slug="canon", canon=True, subchapter_title="React Hooks")
    doc = cms.page_document(factories.page(sub))
    assert {u.domain for u in doc.units} == {"react-hooks"}


def test_imagimodel_has_a_chunk_per_layer_and_zone_with_mnemonic_tags():
    course, _, _ = factories.course_tree()
    doc = cms.imagimodel_document(factories.imagimodel(course=course))
    anchors = [u.unit_anchor for u in doc.units]
    assert anchors[0] == "overview" and sum(a.startswith("layer-") for a in anchors) == 2
    assert sum(a.startswith("zone-") for a in anchors) == 1
    layer = next(u for u in doc.units if u.metadata.get("layer") == "Backpack of Variables")
    assert layer.mnemonic_tags == ["backpack", "backpack-of-variables", "variables"]
    assert "gatekeeper" in doc.units[0].mnemonic_tags and doc.units[0].domain == course.slug


def test_reindex_pages_is_idempotent_and_searchable(local_embedder):
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    first = services.reindex(types=["pages"], embedder=local_embedder)
    assert first.status == IngestRun.Status.DONE
    assert first.created == 3 and first.embedded == 3 and first.failed == 0
    second = services.reindex(types=["pages"], embedder=local_embedder)
    assert (second.created, second.updated, second.deleted, second.embedded) == (0, 0, 0, 0)
    assert second.unchanged == 3
    assert second.duration_ms is not None and second.finished_at is not None
    assert search_ids("how does a function remember variables after the outer function returned",
                      embedder=local_embedder)[0] == str(page.pk)  # fmt: skip


def test_editing_one_block_reembeds_only_that_block(hashing_embedder):
    # hashing embedder: this test counts embeddings, it is not about retrieval quality.
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    services.reindex(types=["pages"], embedder=hashing_embedder)
    block = page.blocks.get(kind=ContentBlock.Kind.TEXT)
    block.text += " Closures are how JavaScript implements private state."
    block.save()
    run = services.reindex(types=["pages"], embedder=hashing_embedder)
    assert (run.updated, run.unchanged, run.embedded, run.created) == (1, 2, 1, 0)


def test_unpublishing_removes_chunks_from_search_and_republishing_restores(local_embedder):
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    services.reindex(types=["pages"], embedder=local_embedder)
    page.visible = False
    page.save()
    services.cms_reindex_objects(kind="pages", ids=[page.pk], embedder=local_embedder)
    assert not live_chunks(source_id=str(page.pk)).exists()
    assert str(page.pk) not in search_ids("closure counter", embedder=local_embedder)
    page.visible = True
    page.published_at = timezone.now() + dt.timedelta(days=3)  # scheduled: still not published
    page.save()
    services.cms_reindex_objects(kind="pages", ids=[page.pk], embedder=local_embedder)
    assert not live_chunks(source_id=str(page.pk)).exists()
    page.published_at = timezone.now() - dt.timedelta(minutes=1)
    page.save()
    run = services.cms_reindex_objects(kind="pages", ids=[page.pk], embedder=local_embedder)
    assert live_chunks(source_id=str(page.pk)).count() == 3
    assert run.embedded == 0  # same text: the stored vectors come back, nothing re-embedded


def test_deleted_page_chunks_go_and_bulk_reindex_hides_orphans_prune_deletes(hashing_embedder):
    # hashing embedder: this test is about removal rules.
    _, _, sub = factories.course_tree()
    kept, gone, orphan = (factories.page(sub, slug=s, title=s) for s in ("kept", "gone", "orphan"))
    services.reindex(types=["pages"], embedder=hashing_embedder)
    gone_id, orphan_id = gone.pk, orphan.pk
    gone.delete()
    services.cms_reindex_objects(kind="pages", ids=[gone_id], embedder=hashing_embedder)
    assert not Chunk.objects.filter(source_id=str(gone_id), collection="course_content").exists()
    orphan.delete()  # deleted behind the admin's back: a bulk reindex finds the orphan chunks
    run = services.reindex(types=["pages"], embedder=hashing_embedder)
    assert run.removed == 1 and not live_chunks(source_id=str(orphan_id)).exists()
    assert Chunk.objects.filter(source_id=str(orphan_id)).exists()  # soft: still stored
    run = services.reindex(types=["pages"], prune=True, embedder=hashing_embedder)
    assert not Chunk.objects.filter(source_id=str(orphan_id)).exists()
    assert live_chunks(source_id=str(kept.pk)).count() == 3


def test_dry_run_reports_changes_and_writes_nothing(hashing_embedder):
    # hashing embedder: about counting, not retrieval.
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    dry = services.reindex(types=["pages"], dry_run=True, embedder=hashing_embedder)
    assert dry.dry_run and (dry.created, dry.embedded) == (3, 3)
    assert not Chunk.objects.exists()
    services.reindex(types=["pages"], embedder=hashing_embedder)
    page.blocks.filter(kind=ContentBlock.Kind.CODE_EDITOR).delete()
    page.visible = True
    before = list(Chunk.objects.order_by("chunk_uid").values_list("chunk_uid", "content_hash", "deleted_at"))
    dry = services.reindex(types=["pages"], dry_run=True, embedder=hashing_embedder)
    assert (dry.created, dry.updated, dry.unchanged, dry.deleted) == (0, 0, 2, 1)
    after = list(Chunk.objects.order_by("chunk_uid").values_list("chunk_uid", "content_hash", "deleted_at"))
    assert before == after


def test_a_failing_document_is_recorded_and_the_batch_goes_on(hashing_embedder, monkeypatch):
    # hashing embedder: about failure isolation.
    _, _, sub = factories.course_tree()
    good = factories.page(sub, slug="good", title="Good")
    bad = factories.page(sub, slug="bad", title="Bad")
    real = cms.page_document

    def shape(page):
        if page.pk == bad.pk:
            raise RuntimeError("broken block data")
        return real(page)

    monkeypatch.setitem(services.CMS, "pages", services.CMS["pages"].__class__(
        **{**services.CMS["pages"].__dict__, "shape": shape}))  # fmt: skip
    run = services.reindex(types=["pages"], embedder=hashing_embedder)
    assert run.status == IngestRun.Status.DONE and run.failed == 1
    assert run.errors == [{"source": f"course_content:page:{bad.pk}", "error": "RuntimeError: broken block data"}]
    assert live_chunks(source_id=str(good.pk)).count() == 3


def test_reflections_are_private_to_their_author_with_hashed_user(local_embedder, user, other_user, staff_user):
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    reflection = Reflection.objects.create(
        user=user, page=page, text="I finally get why my loop handlers all logged 3: var is function scoped."
    )
    services.reindex(types=["reflections"], embedder=local_embedder)
    chunk = Chunk.objects.get(collection="reflections", source_id=str(reflection.pk))
    assert chunk.pii_level == 2 and chunk.visibility == "private"
    assert chunk.owner_hash == chunk.author_hash == user_hash(user.pk)
    assert not {"user", "user_id", "username"} & set(chunk.metadata)
    assert user.username not in chunk.content + chunk.title + str(chunk.metadata)
    query = "loop handlers logged 3 var function scope"
    assert str(reflection.pk) in search_ids(query, scope=Scope.for_user(user), embedder=local_embedder)
    assert str(reflection.pk) not in search_ids(query, scope=Scope.for_user(other_user), embedder=local_embedder)
    assert str(reflection.pk) in search_ids(query, scope=Scope.for_user(staff_user), embedder=local_embedder)


def test_since_only_reshapes_recently_changed_pages(hashing_embedder):
    # hashing embedder: about selection by time.
    _, _, sub = factories.course_tree()
    old = factories.page(sub, slug="old", title="Old")
    services.reindex(types=["pages"], embedder=hashing_embedder)
    cutoff = timezone.now()
    new = factories.page(sub, slug="new", title="New")
    run = services.reindex(types=["pages"], since=cutoff, embedder=hashing_embedder)
    assert run.sources == 1 and run.created == 3
    assert live_chunks(source_id=str(old.pk)).count() == 3 and live_chunks(source_id=str(new.pk)).count() == 3
