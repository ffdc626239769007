"""``manage.py ingest_documents PATH…``: index meeting transcripts, notes and factsheets."""

from __future__ import annotations

from ingestion import services
from ingestion.management.commands._common import FileIngestCommand, parse_since


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


class Command(FileIngestCommand):
    help = (
        "Index documents from files or folders: QMSum meeting JSON (transcripts, chunked on speaker "
        "turns), document-payload JSON (as POST /ingest/documents), markdown and plain text. Only "
        "changed files are re-done."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument(
            "--collection", default=None, help="Default: 'meetings' for transcripts, 'documents' otherwise."
        )
        parser.add_argument("--date", default=None, help="ISO date applied to every document.")
        parser.add_argument("--entity", default="", help="Entity (fund, client…) of every document.")
        parser.add_argument("--people", default="", help="Comma-separated people.")
        parser.add_argument("--tags", default="", help="Comma-separated tags.")
        super().add_arguments(parser)

    def run(self, *, progress_factory, **options):
        if options["date"]:
            parse_since(options["date"])  # validates the date with a clear message
        return services.ingest_document_paths(
            paths=options["paths"], collection=options["collection"], date=options["date"],
            entity=options["entity"], people=_csv(options["people"]), tags=_csv(options["tags"]),
            project=options["project"], visibility="restricted" if options["project"] else "public",
            since=parse_since(options["since"]), dry_run=options["dry_run"], force=options["force"],
            progress_factory=progress_factory,
        )  # fmt: skip
