"""The CMS source: admin-managed content (pages, imagimodels, reflections) → ``SourceDocument``s.

Pure functions of model instances (callers prefetch what they read). Every page block is one
unit anchored on the block's id, so editing one block re-embeds only that block's chunks, and
every unit carries the breadcrumb Course > Chapter > Subchapter > Page and the domain.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.utils.text import slugify

from ingestion.models import ContentBlock, Imagimodel, Page, Reflection
from rag.acl import user_hash
from rag.units import SourceDocument, Unit, Visibility

COURSE_COLLECTION = "course_content"
MNEMONIC_COLLECTION = "mnemonics"
REFLECTION_COLLECTION = "reflections"

PAGE_TYPE = "page"
IMAGIMODEL_TYPE = "imagimodel"
REFLECTION_TYPE = "reflection"

_FENCE_LANG_RE = re.compile(r"^\s*```\s*([\w+#.\-]+)", re.M)
_TAG_STOPWORDS = {"the", "and", "for", "with", "from", "into", "of", "a", "an", "to", "in", "on", "at", "is"}

# Common spellings → the name a filter uses.
_LANGUAGE_ALIASES = {
    "js": "javascript", "jsx": "javascript", "mjs": "javascript", "node": "javascript",
    "ts": "typescript", "tsx": "typescript", "py": "python", "python3": "python",
    "sh": "bash", "shell": "bash", "zsh": "bash", "yml": "yaml", "htm": "html",
    "c++": "cpp", "cs": "csharp", "c#": "csharp", "rb": "ruby", "md": "markdown",
}  # fmt: skip
_EXTENSION_LANGUAGES = {
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "tsx": "typescript", "py": "python", "html": "html", "css": "css",
    "json": "json", "sh": "bash", "sql": "sql", "rb": "ruby", "go": "go", "rs": "rust",
    "java": "java", "md": "markdown", "yml": "yaml", "yaml": "yaml",
}  # fmt: skip


def normalise_language(name: str) -> str:
    name = (name or "").strip().lower()
    return _LANGUAGE_ALIASES.get(name, name)


def _file_language(file: dict) -> str:
    language = normalise_language(str(file.get("language") or ""))
    if language:
        return language
    name = str(file.get("name") or "")
    return _EXTENSION_LANGUAGES.get(name.rsplit(".", 1)[-1].lower(), "") if "." in name else ""


def course_domain(course, subchapter=None) -> str:
    """The domain filter value: canon course → slugified subchapter title; other courses → the
    course slug (each canon subchapter covers one technology, e.g. ``javascript``, ``react``;
    every other course is about one subject)."""
    if course.is_canon and subchapter is not None:
        return slugify(subchapter.title)[:100]
    return course.slug[:100]


def page_breadcrumb(page: Page) -> str:
    sub = page.subchapter
    chapter = sub.chapter
    return " > ".join([chapter.course.title, chapter.title, sub.title, page.title])


def page_url(page: Page) -> str:
    """Where a hit links to: ``KNOWHUB_COURSE_PAGE_URL`` filled with the page's slugs."""
    template = settings.KNOWHUB_COURSE_PAGE_URL
    if not template:
        return ""
    sub = page.subchapter
    return template.format(
        course=sub.chapter.course.slug, chapter=sub.chapter.slug, subchapter=sub.slug, page=page.slug, id=page.pk
    )


def _image_text(block: ContentBlock) -> str:
    parts = []
    if block.image_alt:
        parts.append(f"Image: {block.image_alt.strip()}")
    if block.image_caption:
        parts.append(f"Caption: {block.image_caption.strip()}")
    if block.image_classification:
        parts.append(f"Image type: {block.image_classification.strip()}")
    return "\n".join(parts)


def _code_text(code: str, language: str, name: str = "") -> str:
    header = f"File {name}:\n" if name else ""
    return f"{header}```{language}\n{code.rstrip()}\n```"


def block_text(block: ContentBlock) -> tuple[str, list[str], bool]:
    """A block as indexable text, the code languages it shows, and whether it has an image."""
    parts: list[str] = []
    languages: list[str] = []
    has_image = False
    if block.heading:
        parts.append(f"## {block.heading.strip()}")
    if block.kind == ContentBlock.Kind.VIDEO:
        label = block.video_title or "Video"
        parts.append(f"Video: {label}" + (f" ({block.video_url})" if block.video_url else ""))
        if block.transcript.strip():
            parts.append(f"Transcript:\n{block.transcript.strip()}")
    if block.text.strip():
        parts.append(block.text.strip())
        languages.extend(normalise_language(m) for m in _FENCE_LANG_RE.findall(block.text))
    if block.kind in (ContentBlock.Kind.TEXT_IMAGE, ContentBlock.Kind.TEXT_IMAGE_CODE, ContentBlock.Kind.IMAGE):
        image = _image_text(block)
        if image or block.image_url:
            has_image = True
        if image:
            parts.append(image)
    if block.kind in (ContentBlock.Kind.TEXT_IMAGE_CODE, ContentBlock.Kind.CODE_EDITOR) and block.code.strip():
        language = normalise_language(block.language)
        parts.append(_code_text(block.code, language))
        if language:
            languages.append(language)
    if block.kind == ContentBlock.Kind.CODE_EDITOR:
        for file in block.files or []:
            if not isinstance(file, dict) or not str(file.get("code") or "").strip():
                continue
            language = _file_language(file)
            parts.append(_code_text(str(file["code"]), language, str(file.get("name") or "")))
            if language:
                languages.append(language)
    return "\n\n".join(parts), sorted({lang for lang in languages if lang}), has_image


def page_document(page: Page) -> SourceDocument:
    """One page: a unit per non-empty block (plus the summary), all sharing the breadcrumb."""
    sub = page.subchapter
    course = sub.chapter.course
    domain = course_domain(course, sub)
    breadcrumb = page_breadcrumb(page)
    url = page_url(page)
    concepts = sorted({c.strip().lower() for c in page.concepts if c and c.strip()})
    base_meta = {
        "course": course.slug,
        "chapter": sub.chapter.slug,
        "subchapter": sub.slug,
        "page": page.slug,
        "page_id": page.pk,
        "page_type": page.page_type,
    }
    date = page.published_at.date() if page.published_at else None
    units: list[Unit] = []
    if page.summary.strip():
        units.append(
            Unit(
                unit_anchor="summary", content=page.summary.strip(), title=page.title, breadcrumb=breadcrumb,
                url=url, domain=domain, concepts=concepts, date=date, metadata={**base_meta, "block": "summary"},
            )
        )  # fmt: skip
    for block in page.blocks.all():
        text, languages, has_image = block_text(block)
        if not text.strip():
            continue
        meta = {**base_meta, "block_id": block.pk, "block_kind": block.kind}
        if block.image_url:
            meta["image_url"] = block.image_url
        if block.image_classification:
            meta["image_classification"] = block.image_classification
        if block.video_url:
            meta["video_url"] = block.video_url
        if block.kind == ContentBlock.Kind.CODE_EDITOR and block.files:
            meta["files"] = [str(f.get("name") or "") for f in block.files if isinstance(f, dict)]
        units.append(
            Unit(
                unit_anchor=f"b{block.pk}", content=text, title=page.title, breadcrumb=breadcrumb, url=url,
                domain=domain, concepts=concepts, code_languages=languages, has_image=has_image, date=date,
                metadata=meta,
            )
        )  # fmt: skip
    return SourceDocument(
        collection=COURSE_COLLECTION, source_type=PAGE_TYPE, source_id=str(page.pk), units=units,
        chunk_size=settings.KNOWHUB_CHUNK_SIZE, chunk_overlap=settings.KNOWHUB_CHUNK_OVERLAP,
    )  # fmt: skip


def mnemonic_tags(name: str) -> list[str]:
    """A layer name → tags: its slug and each meaningful word ("Closure Backpack" → 3 tags)."""
    slug = slugify(name)
    if not slug:
        return []
    words = [w for w in slug.split("-") if len(w) > 2 and w not in _TAG_STOPWORDS]
    return sorted({slug, *words})


def imagimodel_document(model: Imagimodel) -> SourceDocument:
    """An imagimodel: one unit for the whole picture, one per layer and one per zone."""
    domain = course_domain(model.course) if model.course_id else ""
    layers = list(model.layers.all())
    zones = list(model.zones.all())
    all_tags = sorted({tag for layer in layers for tag in mnemonic_tags(layer.name)})
    concepts = sorted({c.strip().lower() for c in model.concepts if c and c.strip()})
    crumb = f"{model.course.title} > {model.title}" if model.course_id else model.title
    base_meta = {"imagimodel": model.slug, "imagimodel_id": model.pk}
    if model.image_url:
        base_meta["image_url"] = model.image_url
    url = ""
    units: list[Unit] = []
    overview = [model.description.strip()] if model.description.strip() else []
    if layers:
        overview.append("Layers: " + "; ".join(layer.name for layer in layers))
    if zones:
        overview.append("Zones: " + "; ".join(zone.name for zone in zones))
    if overview:
        units.append(
            Unit(
                unit_anchor="overview", content="\n\n".join(overview), title=model.title, breadcrumb=crumb, url=url,
                domain=domain, concepts=concepts, mnemonic_tags=all_tags, has_image=bool(model.image_url),
                metadata={**base_meta, "part": "overview"},
            )
        )  # fmt: skip
    for layer in layers:
        text = [f"Layer: {layer.name}"]
        if layer.description.strip():
            text.append(layer.description.strip())
        if layer.image_alt.strip():
            text.append(f"Image: {layer.image_alt.strip()}")
        units.append(
            Unit(
                unit_anchor=f"layer-{layer.pk}", content="\n\n".join(text), title=f"{model.title} — {layer.name}",
                breadcrumb=f"{crumb} > {layer.name}", url=url, domain=domain, concepts=concepts,
                mnemonic_tags=sorted(set(mnemonic_tags(layer.name))) or all_tags,
                has_image=bool(layer.image_url or model.image_url),
                metadata={**base_meta, "part": "layer", "layer": layer.name, "order": layer.order},
            )
        )  # fmt: skip
    for zone in zones:
        text = [f"Zone: {zone.name}"]
        if zone.description.strip():
            text.append(zone.description.strip())
        units.append(
            Unit(
                unit_anchor=f"zone-{zone.pk}", content="\n\n".join(text), title=f"{model.title} — {zone.name}",
                breadcrumb=f"{crumb} > {zone.name}", url=url, domain=domain, concepts=concepts,
                mnemonic_tags=all_tags, has_image=bool(model.image_url),
                metadata={**base_meta, "part": "zone", "zone": zone.name, "x": zone.x, "y": zone.y, "zoom": zone.zoom},
            )
        )  # fmt: skip
    return SourceDocument(
        collection=MNEMONIC_COLLECTION, source_type=IMAGIMODEL_TYPE, source_id=str(model.pk), units=units,
        chunk_size=settings.KNOWHUB_CHUNK_SIZE, chunk_overlap=settings.KNOWHUB_CHUNK_OVERLAP,
    )  # fmt: skip


def reflection_document(reflection: Reflection) -> SourceDocument:
    """A reflection: private to its author, PII level 2, the user known only by a keyed hash."""
    owner = user_hash(reflection.user_id)
    page = reflection.page
    breadcrumb = page_breadcrumb(page) if page else ""
    domain = course_domain(page.subchapter.chapter.course, page.subchapter) if page else ""
    meta: dict = {"reflection_id": reflection.pk}
    if page:
        meta["page_id"] = page.pk
    unit = Unit(
        unit_anchor="u_0", content=reflection.text.strip(),
        title=reflection.title or (f"Reflection on {page.title}" if page else "Reflection"),
        breadcrumb=breadcrumb, domain=domain, concepts=sorted(page.concepts) if page else [],
        date=reflection.created_at.date() if reflection.created_at else None, metadata=meta,
    )  # fmt: skip
    return SourceDocument(
        collection=REFLECTION_COLLECTION, source_type=REFLECTION_TYPE, source_id=str(reflection.pk),
        units=[unit] if unit.content else [], visibility=Visibility.PRIVATE, owner_hash=owner, author_hash=owner,
        pii_level=2, chunk_size=settings.KNOWHUB_CHUNK_SIZE, chunk_overlap=settings.KNOWHUB_CHUNK_OVERLAP,
    )  # fmt: skip
