"""``manage.py sync_markdown PATH``: index a Logseq graph or a folder of markdown notes."""

from __future__ import annotations

from ingestion import services
from ingestion.management.commands._common import FileIngestCommand, parse_since


class Command(FileIngestCommand):
    help = (
        "Index a Logseq graph (journals/ and pages/) or a folder of markdown notes. Only files that "
        "changed since the last sync are re-done; deleted files' chunks are removed; files that "
        "cannot be parsed are reported, not fatal."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="The graph or folder.")
        parser.add_argument("--format", dest="fmt", choices=["logseq", "markdown"], default="logseq")
        parser.add_argument("--collection", default=None, help="Collection name (default: the format).")
        super().add_arguments(parser)

    def run(self, *, progress_factory, **options):
        return services.sync_markdown(
            path=options["path"], fmt=options["fmt"], collection=options["collection"],
            project=options["project"], visibility="restricted" if options["project"] else "public",
            since=parse_since(options["since"]), dry_run=options["dry_run"], force=options["force"],
            progress_factory=progress_factory,
        )  # fmt: skip
