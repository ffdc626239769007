"""The demo corpus knowhub writes itself: a team handbook, meeting notes and engineering notes.

Meeting dates are relative to the day of loading (so "last month" questions work whenever the
demo runs); everything else is fixed text. Loading twice changes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from rag.units import SourceDocument, Unit, Visibility

DEMO_PROJECT = ("platform-team", "Platform team")

# Demo content of other apps (``manage.py load_demo`` runs them after the corpus): each app
# registers its loader in its ``AppConfig.ready``, so rag never imports it.
_extra_loaders: dict[str, Callable[[], object]] = {}


def register_demo_loader(name: str, loader: Callable[[], object]) -> None:
    """Add (or replace) the demo loader ``name``; ``load_demo`` reports its result under it."""
    _extra_loaders[name] = loader


_CORPUS_INDEXER: list[Callable[..., dict]] = []


def register_demo_corpus_indexer(indexer: Callable[..., dict]) -> None:
    """Ingestion indexes the demo corpus on a recorded run (``indexer(documents, embedder)``
    returns the run's counts); without one the corpus is upserted directly."""
    _CORPUS_INDEXER[:] = [indexer]


def demo_extra_loaders() -> dict[str, Callable[[], object]]:
    """The registered demo loaders by name, in the order they were first registered."""
    return dict(_extra_loaders)

DEMO_DOCUMENTS: list[dict] = [
    {
        "id": "getting-started",
        "collection": "handbook",
        "title": "Getting started with knowhub",
        "domain": "knowhub",
        "tags": ["onboarding", "search"],
        "text": (
            "knowhub keeps one searchable index of what the team already writes: course pages edited in "
            "the admin, Notion pages, Logseq graphs and meeting notes. Everything lands in PostgreSQL "
            "with the pgvector extension, so there is no second search service to run.\n\n"
            "Ask a question on the home page and knowhub answers with numbered citations. Each [n] opens "
            "the whole source document, with the cited passage marked and a link to the original when "
            "there is one; sources are listed in the order they are cited. Without an LLM configured, "
            "answers are extractive: knowhub quotes the sentences that best answer the question and says "
            "so. Set OPENAI_API_KEY or LLM_BASE_URL to get written answers from a language model.\n\n"
            "Use the filters to narrow a question to a collection, a date range, a domain or an entity "
            "such as a client. Questions like 'what did we decide last month' are turned into date "
            "filters automatically."
        ),
    },
    {
        "id": "how-search-works",
        "collection": "handbook",
        "title": "How knowhub search ranks results",
        "domain": "knowhub",
        "tags": ["search", "ranking"],
        "text": (
            "Search is hybrid. The query is embedded with a local sentence-transformers model "
            "(all-MiniLM-L6-v2, 384 dimensions) and compared with every chunk through an HNSW index "
            "using cosine distance. At the same time PostgreSQL full-text search finds chunks that "
            "contain the query's words.\n\n"
            "The two candidate lists are merged and each chunk gets a score of 0.7 times its vector "
            "similarity plus 0.3 times its normalised text score. Reciprocal rank fusion is available "
            "as an alternative. Relevance judgments collected from the thumbs buttons can retune these "
            "weights: the tuning command only activates new weights when they beat the old ones on "
            "held-back judgments."
        ),
    },
    {
        "id": "connecting-notion",
        "collection": "handbook",
        "title": "Connecting Notion",
        "domain": "knowhub",
        "tags": ["notion", "ingestion"],
        "text": (
            "There are two ways to bring Notion pages in. Pushed: an n8n workflow (examples/n8n in the "
            "repository) posts each changed page to /notion/ingest with the webhook secret, "
            "KNOWHUB_NOTION_WEBHOOK_SECRET, as 'Authorization: Bearer <secret>', or signs the raw body "
            "with it (X-Knowhub-Signature: sha256=<hex HMAC-SHA256>). Pulled: set NOTION_TOKEN and run "
            "manage.py notion_sync, which fetches only pages edited since the last sync and soft-deletes "
            "pages that disappeared.\n\n"
            "Properties are sent as the Notion database names them: Title, Tags, Date, Author, Domain and "
            "Category are read in any case and spacing, and any other property is kept as metadata, where "
            "a property mapping (manage.py source_settings) can turn it into people, tags, entity, date "
            "or domain. A page id with or without dashes, or the page's notion.so URL, is the same page.\n\n"
            "The page ends as it was last sent: sending it again unchanged embeds nothing, an earlier text "
            "sent again (a revert) is applied, and a delivery with an older last_edited_time never "
            "overwrites a newer one. A page sent with archived or in_trash set to true is hidden from "
            "search, its history kept, and comes back when it is sent again."
        ),
    },
    {
        "id": "logseq-sync",
        "collection": "handbook",
        "title": "Syncing a Logseq graph",
        "domain": "knowhub",
        "tags": ["logseq", "ingestion"],
        "text": (
            "Run manage.py sync_markdown PATH --format logseq to index a Logseq graph. Journals take "
            "their date from the file name; pages keep their properties, links and tags as metadata. "
            "Block references are resolved to the text they point to.\n\n"
            "Chunks follow the bullet hierarchy: a nested bullet is stored with the path of its parent "
            "bullets, so an answer quoting it still makes sense on its own. Only files that changed are "
            "parsed again, and the chunks of a deleted file are removed."
        ),
    },
    {
        "id": "release-checklist",
        "collection": "engineering",
        "title": "Release checklist",
        "domain": "engineering",
        "tags": ["release", "process"],
        "code_languages": ["bash"],
        "text": (
            "Before a release: run the full test suite with make test, run manage.py evaluate on the "
            "SciFact folder and compare nDCG@10 with the previous release, and read the migration plan.\n\n"
            "Tag the release, build the image and deploy the web and worker services together. Run "
            "migrations before switching traffic. If the embedding model changes, run manage.py reembed "
            "first: search keeps answering from the old vectors until the final swap.\n\n"
            "```bash\nmake test\n.venv/bin/python manage.py evaluate --dataset ../shared/data/scifact\n```"
        ),
    },
    {
        "id": "hnsw-tuning",
        "collection": "engineering",
        "title": "Tuning HNSW in pgvector",
        "domain": "engineering",
        "tags": ["postgres", "pgvector", "performance"],
        "text": (
            "HNSW builds a layered graph over the vectors. The build parameters m (links per node, 16 by "
            "default) and ef_construction (64) trade build time and memory for recall. At query time "
            "hnsw.ef_search sets how many candidates the search keeps; it must be at least the LIMIT, "
            "otherwise fewer rows come back.\n\n"
            "With a WHERE clause, pgvector 0.8 can continue scanning the index until enough rows pass the "
            "filter: set hnsw.iterative_scan to relaxed_order. For very selective filters an exact scan "
            "over the matching rows is often faster than the index."
        ),
    },
    {
        "id": "oncall-runbook",
        "collection": "engineering",
        "title": "On-call runbook: ingestion backlog",
        "domain": "engineering",
        "tags": ["oncall", "celery", "redis"],
        "restricted": True,
        "text": (
            "If the ingestion backlog grows, first check the worker: manage.py health reports the broker "
            "and the embedding provider. A Redis outage does not lose webhook deliveries, because each "
            "delivery is stored in the database before it is queued; requeue them from the admin once "
            "Redis is back.\n\n"
            "If the embedding provider rate-limits, tasks retry with exponential backoff and jitter. "
            "Do not restart workers in a loop: acknowledged-late tasks are redelivered automatically."
        ),
    },
    {
        "id": "platform-budget-2027",
        "collection": "planning",
        "title": "Platform team budget 2027",
        "domain": "engineering",
        "tags": ["budget", "planning"],
        "text": (
            "The platform team budget for 2027 is 412,000 euros, up from 365,000 euros this year. Most of the "
            "increase pays for a second on-call engineer from March.\n\n"
            "Plans for next year: hire the second on-call engineer, move search to pgvector 0.8 iterative scans, "
            "and run OCR on every ingestion path. Hosting stays on the two existing servers."
        ),
    },
    {
        "id": "meeting-acme-kickoff",
        "collection": "meetings",
        "title": "Acme Capital kickoff",
        "domain": "clients",
        "tags": ["kickoff", "acme"],
        "entity": "Acme Capital",
        "people": ["Leo Martin", "Maya Chen"],
        "days_ago": 120,
        "text": (
            "Leo Martin: Acme Capital wants a search over ten years of investment memos.\n"
            "Maya Chen: They care most about citations; analysts must be able to open the source memo.\n"
            "Leo Martin: We agreed to start with the 2019 to 2024 memos and a weekly sync.\n"
            "Maya Chen: Decision: pilot with five analysts, review after six weeks."
        ),
    },
    {
        "id": "meeting-acme-review",
        "collection": "meetings",
        "title": "Acme Capital pilot review",
        "domain": "clients",
        "tags": ["review", "acme"],
        "entity": "Acme Capital",
        "people": ["Leo Martin", "Maya Chen", "Sam Okafor"],
        "days_ago": 75,
        "text": (
            "Sam Okafor: Analysts used the pilot 340 times; most questions were about fund performance.\n"
            "Maya Chen: Two complaints: old memos ranked above recent ones, and scanned PDFs had no text.\n"
            "Leo Martin: Decision: add recency as a ranking feature and run OCR on scanned memos.\n"
            "Sam Okafor: Acme Capital will extend the pilot to the whole research team."
        ),
    },
    {
        "id": "meeting-northwind-intro",
        "collection": "meetings",
        "title": "Northwind Fund introduction",
        "domain": "clients",
        "tags": ["intro", "northwind"],
        "entity": "Northwind Fund",
        "people": ["Leo Martin", "Priya Raman"],
        "days_ago": 40,
        "text": (
            "Priya Raman: Northwind Fund keeps its research in Notion and meeting notes in Google Docs.\n"
            "Leo Martin: knowhub can pull Notion directly; documents can be posted to /ingest/documents.\n"
            "Priya Raman: Their compliance team needs restricted projects so that deal notes stay private.\n"
            "Leo Martin: Decision: send a proposal with project-level access control by Friday."
        ),
    },
    {
        "id": "meeting-platform-weekly",
        "collection": "meetings",
        "title": "Platform weekly",
        "domain": "engineering",
        "tags": ["weekly", "platform"],
        "people": ["Maya Chen", "Sam Okafor"],
        "days_ago": 9,
        "restricted": True,
        "text": (
            "Maya Chen: p95 search latency is 24 ms at 100k chunks with the hybrid mode.\n"
            "Sam Okafor: The nightly Notion sync hit rate limits twice; the backoff handled both.\n"
            "Maya Chen: Decision: move the Logseq sync to every fifteen minutes.\n"
            "Sam Okafor: Leo Martin asked for a monthly report of unanswered questions."
        ),
    },
    {
        "id": "meeting-leo-1on1",
        "collection": "meetings",
        "title": "1:1 with Leo",
        "domain": "people",
        "tags": ["1on1"],
        "people": ["Leo Martin", "Maya Chen"],
        "days_ago": 3,
        "text": (
            "Maya Chen: Leo wants to spend more time with clients and less on release management.\n"
            "Leo Martin: I will hand the release checklist to Sam and pair with him on the next release.\n"
            "Maya Chen: We agreed to revisit the Northwind proposal once their compliance team replies."
        ),
    },
]


def demo_documents(today: dt.date | None = None) -> list[SourceDocument]:
    """The demo corpus as source documents (restricted ones belong to the platform project)."""
    today = today or dt.date.today()
    docs = []
    for item in DEMO_DOCUMENTS:
        date = today - dt.timedelta(days=item["days_ago"]) if "days_ago" in item else None
        metadata = {k: item[k] for k in ("entity", "people") if k in item}
        metadata["tags"] = item.get("tags", [])
        restricted = item.get("restricted", False)
        docs.append(
            SourceDocument(
                collection=item["collection"],
                source_type="demo",
                source_id=item["id"],
                visibility=Visibility.RESTRICTED if restricted else Visibility.PUBLIC,
                project=DEMO_PROJECT[0] if restricted else None,
                units=[
                    Unit(
                        unit_anchor="body",
                        title=item["title"],
                        content=item["text"],
                        domain=item.get("domain", ""),
                        concepts=item.get("tags", []),
                        code_languages=item.get("code_languages", []),
                        date=date,
                        metadata=metadata,
                    )
                ],
            )
        )
    return docs


def demo_index_follow_runtime() -> dict | None:
    """Move an index made by the local model on another runtime (torch, onnx, onnx-int8) to the
    configured one, so that a demo made before the default runtime changed keeps answering instead
    of refusing every search as a mix of models. Another model or provider is left alone: its
    searches say to run ``manage.py reembed``."""
    from rag.embeddings import get_embedder
    from rag.selectors import index_models
    from rag.services import index_reembed

    target = get_embedder()
    family = target.name.split("+")[0]
    others = [m for m in index_models() if m != target.name]
    if not others or any(m.split("+")[0] != family for m in others):
        return None
    return index_reembed(target=target)


def demo_load(*, credentials_path, embedder=None) -> dict:
    """Create the demo admin, its API token and project, and index the demo corpus (idempotent).

    The admin password is generated once and kept in ``credentials_path`` (under var/, never
    in git), so every run of ``make demo`` prints the same login.
    """
    import json
    import secrets

    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from rag.models import Project
    from rag.services import chunk_upsert

    if credentials_path.exists():
        creds = json.loads(credentials_path.read_text())
    else:
        creds = {"username": "admin", "password": secrets.token_urlsafe(12)}
        credentials_path.parent.mkdir(parents=True, exist_ok=True)
        credentials_path.write_text(json.dumps(creds))
        credentials_path.chmod(0o600)
    User = get_user_model()
    admin, created = User.objects.get_or_create(
        username=creds["username"], defaults={"is_staff": True, "is_superuser": True, "email": "admin@example.com"}
    )
    if created or not admin.check_password(creds["password"]):
        admin.set_password(creds["password"])
        admin.is_staff = admin.is_superuser = True
        admin.save()
    token, _ = Token.objects.get_or_create(user=admin)
    project, _ = Project.objects.get_or_create(slug=DEMO_PROJECT[0], defaults={"name": DEMO_PROJECT[1]})
    project.members.add(admin)
    if _CORPUS_INDEXER:
        index = _CORPUS_INDEXER[0](demo_documents(), embedder)
    else:
        index = chunk_upsert(documents=demo_documents(), embedder=embedder).as_dict()
    return {"username": creds["username"], "password": creds["password"], "token": token.key, "index": index}
