"""Small builders for ingestion tests: a course tree with typed blocks, an imagimodel."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from ingestion.models import (
    Chapter,
    ContentBlock,
    Course,
    Imagimodel,
    Layer,
    Page,
    Subchapter,
    Zone,
)


def course_tree(*, slug: str = "js-foundations", canon: bool = False, subchapter_title: str = "JavaScript"):
    course, _ = Course.objects.get_or_create(slug=slug, defaults={"title": f"Course {slug}", "is_canon": canon})
    chapter, _ = Chapter.objects.get_or_create(course=course, slug="functions", defaults={"title": "Functions"})
    sub, _ = Subchapter.objects.get_or_create(
        chapter=chapter, slug=subchapter_title.lower().replace(" ", "-"), defaults={"title": subchapter_title}
    )
    return course, chapter, sub


def page(sub: Subchapter, *, slug: str = "closures", title: str = "Closures", published: bool = True,
         concepts=("closures", "scope"), blocks: list[dict] | None = None) -> Page:  # fmt: skip
    p = Page.objects.create(
        subchapter=sub, slug=slug, title=title, concepts=list(concepts),
        published_at=timezone.now() - dt.timedelta(days=1) if published else None,
    )  # fmt: skip
    for i, spec in enumerate(blocks if blocks is not None else default_blocks()):
        ContentBlock.objects.create(page=p, order=i, **spec)
    return p


def default_blocks() -> list[dict]:
    return [
        {
            "kind": ContentBlock.Kind.TEXT, "heading": "What a closure is",
            "text": "A closure is a function bundled with references to the variables of the scope it was "
            "created in. The inner function keeps those variables alive after the outer function returns.",
        },
        {
            "kind": ContentBlock.Kind.TEXT_IMAGE_CODE, "text": "A counter keeps its count in a closure.",
            "image_url": "https://example.org/counter.png", "image_alt": "Diagram of a counter closure holding count",
            "image_caption": "The returned function still sees count", "image_classification": "diagram",
            "code": "function makeCounter() {\n  let count = 0;\n  return () => ++count;\n}", "language": "js",
        },
        {
            "kind": ContentBlock.Kind.CODE_EDITOR, "text": "Try it: two counters do not share state.",
            "files": [
                {"name": "counter.js", "code": "export const makeCounter = () => { let n = 0; return () => ++n; };"},
                {"name": "index.html", "language": "html", "code": "<script type=module src=counter.js></script>"},
            ],
        },
    ]  # fmt: skip


def imagimodel(*, course: Course | None = None) -> Imagimodel:
    model = Imagimodel.objects.create(
        slug="closure-castle", title="The Closure Castle", course=course,
        description="A castle whose rooms remember who built them.", image_url="https://example.org/castle.png",
        published_at=timezone.now() - dt.timedelta(days=1),
    )  # fmt: skip
    Layer.objects.create(imagimodel=model, order=0, name="Backpack of Variables",
                         description="Each function carries a backpack with the variables it closed over.")  # fmt: skip
    Layer.objects.create(imagimodel=model, order=1, name="Gatekeeper", description="The outer function guards the gate.")
    Zone.objects.create(imagimodel=model, order=0, name="Throne room", description="Where the returned function sits.",
                        x=0.3, y=0.6, zoom=2.0)  # fmt: skip
    return model
