"""``manage.py notion_sync``: pull Notion pages with notion-client (NOTION_TOKEN)."""

from __future__ import annotations

from ingestion import services
from ingestion.management.commands._common import IngestCommand, parse_since


class Command(IngestCommand):
    help = (
        "Pull pages from Notion (databases in KNOWHUB_NOTION_DATABASES or --database, else every page "
        "shared with the integration). Only pages edited since their last sync are re-fetched; pages "
        "that vanished are taken out of search (deleted with --prune)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--database", action="append", default=None, help="Database or data source id (repeatable)."
        )
        parser.add_argument("--full", action="store_true", help="Re-fetch every page.")
        parser.add_argument("--since", default=None, help="Only pages edited since this ISO date/time.")
        parser.add_argument("--prune", action="store_true", help="Delete (not just hide) vanished pages' chunks.")
        super().add_arguments(parser)

    def run(self, *, progress_factory, **options):
        return services.notion_sync(
            database_ids=options["database"], full=options["full"], since=parse_since(options["since"]),
            dry_run=options["dry_run"], prune=options["prune"], progress_factory=progress_factory,
        )  # fmt: skip
