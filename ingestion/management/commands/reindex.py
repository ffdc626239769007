"""``manage.py reindex``: bring the index in line with every (or some) source."""

from __future__ import annotations

from django.core.management.base import CommandError

from ingestion import services
from ingestion.management.commands._common import IngestCommand, parse_since


class Command(IngestCommand):
    help = (
        "Re-shape sources and reconcile their chunks: types pages, imagimodels, reflections, notion, "
        "markdown, documents or all. Unchanged chunks are never re-embedded."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--types", default="all",
            help=f"Comma-separated: {', '.join(services.ALL_TYPES)} or all (default).",
        )  # fmt: skip
        parser.add_argument("--since", default=None, help="Only sources changed since this ISO date/time.")
        parser.add_argument(
            "--prune", action="store_true", help="Delete (not just hide) unpublished/vanished sources' chunks."
        )
        super().add_arguments(parser)

    def run(self, *, progress_factory, **options):
        try:
            types = services.normalise_types(options["types"].split(","))
        except services.IngestError as exc:
            raise CommandError(str(exc)) from exc
        return services.reindex(
            types=types, since=parse_since(options["since"]), dry_run=options["dry_run"], prune=options["prune"],
            progress_factory=progress_factory,
        )  # fmt: skip
