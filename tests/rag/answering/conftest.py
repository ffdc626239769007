"""A small corpus written for these tests: journal entries with people and tags, meeting notes
with an entity, course pages, one restricted and one private document."""

from __future__ import annotations

import datetime as dt

import pytest

from rag.acl import user_hash
from rag.models import Project
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit

TODAY = dt.date.today()


def days_ago(n: int) -> dt.date:
    return TODAY - dt.timedelta(days=n)


def add_page(
    embedder, *, collection: str, source_id: str, title: str, content: str, date: dt.date | None = None
) -> None:
    """Index one single-part document beside a test's corpus (the page or meeting it is about)."""
    unit = Unit(unit_anchor="body", title=title, content=content, date=date)
    document = SourceDocument(collection=collection, source_type="demo", source_id=source_id, units=[unit])
    assert not chunk_upsert(documents=[document], embedder=embedder).errors


JOURNAL = [
    # (id, days ago, people, tags, text)
    (
        "j1", 3, ["Leo"], ["climbing"],
        "Went bouldering with Leo at the climbing gym. Leo finally sent the overhang problem he had been projecting "
        "for weeks. We celebrated with ramen afterwards.",
    ),
    (
        "j2", 20, ["Leo", "Ana"], ["dinner"],
        "Dinner at Ana's place with Leo. Ana cooked a mushroom risotto and Leo brought a bottle of Barolo. We talked "
        "about Ana's new job at the observatory.",
    ),
    (
        "j3", 45, ["Ana"], ["running"],
        "Morning run along the river with Ana. She is training for the Lisbon half marathon in October. My knee hurt "
        "a little after ten kilometres.",
    ),
    (
        "j4", 70, ["Leo"], ["climbing"],
        "Climbing trip to Fontainebleau with Leo. The sandstone was perfect and Leo taught me how to heel hook on the "
        "slopers.",
    ),
    (
        "j5", 400, ["Leo"], ["dinner"],
        "Birthday dinner for Leo at the Thai restaurant. He turned thirty and we gave him a new chalk bag.",
    ),
]

MEETINGS = [
    (
        "m1", 10, "Aurora Fund",
        "Quarterly review with the Aurora Fund managers. Aurora Fund returned 4.2 percent this quarter, driven by "
        "European small caps. The team plans to reduce exposure to energy stocks next quarter.",
    ),
    (
        "m2", 100, "Borealis Capital",
        "Intro call with Borealis Capital. Borealis Capital runs a market-neutral strategy with a target volatility "
        "of six percent. Fees are one and a half percent management and fifteen percent performance.",
    ),
]

COURSE = [
    (
        "p1", "Closures", "javascript",
        "A closure is a function bundled together with references to its surrounding state, the lexical environment. "
        "In JavaScript, closures are created every time a function is created. Closures let an inner function access "
        "variables of an outer function even after the outer function has returned. A common use of closures is data "
        "privacy: the enclosed variables are not reachable from outside.",
    ),
    (
        "p2", "Promises", "javascript",
        "A Promise represents the eventual completion or failure of an asynchronous operation. A promise is in one of "
        "three states: pending, fulfilled or rejected. The then method attaches callbacks for the fulfilled and "
        "rejected cases, and async functions let you await a promise.",
    ),
    (
        "p3", "List comprehensions", "python",
        "List comprehensions provide a concise way to create lists in Python. A list comprehension consists of "
        "brackets containing an expression followed by a for clause. They are usually faster and more readable than "
        "the equivalent loop with append.",
    ),
]


def corpus_documents(project_slug: str, owner_id: int) -> list[SourceDocument]:
    docs = []
    for sid, ago, people, tags, text in JOURNAL:
        docs.append(
            SourceDocument(
                collection="journal",
                source_type="entry",
                source_id=sid,
                units=[
                    Unit(
                        unit_anchor="body",
                        content=text,
                        title=f"Journal {days_ago(ago).isoformat()}",
                        date=days_ago(ago),
                        url=f"https://notes.example/{sid}",
                        metadata={"people": people, "tags": tags},
                    )
                ],
            )
        )
    for sid, ago, entity, text in MEETINGS:
        docs.append(
            SourceDocument(
                collection="meetings",
                source_type="meeting",
                source_id=sid,
                units=[
                    Unit(
                        unit_anchor="notes",
                        content=text,
                        title=f"{entity} meeting",
                        date=days_ago(ago),
                        url=f"https://meetings.example/{sid}",
                        metadata={"entity": entity},
                    )
                ],
            )
        )
    for sid, title, domain, text in COURSE:
        docs.append(
            SourceDocument(
                collection="course",
                source_type="page",
                source_id=sid,
                units=[Unit(unit_anchor="b0", content=text, title=title, domain=domain, url=f"https://course.example/{sid}")],
            )
        )
    docs.append(
        SourceDocument(
            collection="secret",
            source_type="doc",
            source_id="s1",
            visibility="restricted",
            project=project_slug,
            units=[
                Unit(
                    unit_anchor="b0",
                    title="Project Nightingale",
                    content=(
                        "Project Nightingale is the codename for the acquisition of Zephyr Robotics, planned for the "
                        "spring. Only the deal team may know about Nightingale. Zephyr's founder is called Mirela Voss."
                    ),
                    metadata={"people": ["Mirela Voss"], "tags": ["acquisition"]},
                )
            ],
        )
    )
    docs.append(
        SourceDocument(
            collection="journal",
            source_type="entry",
            source_id="private-1",
            visibility="private",
            owner_hash=user_hash(owner_id),
            units=[
                Unit(
                    unit_anchor="body",
                    title="Private note",
                    content="My private therapy note: I talked with Dr. Okafor about sleeping badly before deadlines.",
                    date=days_ago(5),
                    metadata={"people": ["Dr. Okafor"], "tags": ["health"]},
                )
            ],
        )
    )
    return docs


@pytest.fixture
def corpus(db, local_embedder, staff_user, django_user_model):
    """The corpus, indexed with the real model. The restricted doc belongs to project 'deal'
    (members: ``insider``); the private note to ``staff_user``'s colleague ``owner``."""
    from django.core.cache import cache

    cache.clear()
    project = Project.objects.create(slug="deal", name="Deal team")
    insider = django_user_model.objects.create_user(username="insider", password="pw-insider-123")
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    project.members.add(insider)
    result = chunk_upsert(documents=corpus_documents("deal", owner.pk), embedder=local_embedder)
    assert not result.errors
    return {"insider": insider, "owner": owner, "project": project}
