"""What every ingestion command shares: ``--json`` counts, a tqdm bar otherwise, clear errors."""

from __future__ import annotations

import datetime as dt
import json
import logging

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from ingestion.models import IngestRun
from ingestion.services import IngestError

logger = logging.getLogger(__name__)


def parse_since(value: str | None) -> dt.datetime | None:
    """``2025-01-31`` or an ISO datetime → an aware datetime; anything else is a CommandError."""
    if not value:
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        day = parse_date(value)
        if day is None:
            raise CommandError(f"--since: {value!r} is not an ISO date or datetime")
        parsed = dt.datetime.combine(day, dt.time.min)
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, dt.UTC)
    return parsed


class IngestCommand(BaseCommand):
    """Base: subclasses implement ``run(progress_factory, **options) -> IngestRun``."""

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print the run's counts as JSON.")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change; write nothing.")

    def progress_factory(self, options):
        if options["json"] or options.get("verbosity", 1) < 1:
            return None
        from tqdm import tqdm

        bars: list = []

        def factory(total: int):
            bar = tqdm(total=total or None, unit="src", file=self.stderr._out, leave=False, dynamic_ncols=True)
            bars.append(bar)
            return bar.update

        self._bars = bars
        return factory

    def handle(self, *args, **options):
        try:
            run = self.run(progress_factory=self.progress_factory(options), **options)
        except IngestError as exc:
            raise CommandError(str(exc)) from exc
        except CommandError:
            raise
        except Exception as exc:  # recorded on the run already; say it plainly
            logger.exception("%s failed", self.__module__)
            raise CommandError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            for bar in getattr(self, "_bars", []):
                bar.close()
        self.report(run, options)
        if run.status == IngestRun.Status.FAILED:
            raise CommandError(f"run #{run.pk} failed: {run.message}")

    def run(self, *, progress_factory, **options) -> IngestRun:  # pragma: no cover - abstract
        raise NotImplementedError

    def report(self, run: IngestRun, options) -> None:
        summary = run.summary()
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2, default=str))
            return
        prefix = "DRY RUN — would have: " if run.dry_run else ""
        self.stdout.write(
            f"{prefix}run #{run.pk} {run.source} {run.status} in {summary['duration_s']} s: "
            f"{run.sources} sources ({run.skipped} unchanged since last sync, {run.removed} removed, "
            f"{run.failed} failed); chunks {run.created} created, {run.updated} updated, "
            f"{run.unchanged} unchanged, {run.deleted} deleted; {run.embedded} embedded"
        )
        for error in run.errors[:20]:
            self.stderr.write(f"  ✗ {error['source']}: {error['error']}")
        if len(run.errors) > 20:
            self.stderr.write(f"  … and {len(run.errors) - 20} more (see the run in the admin)")


class FileIngestCommand(IngestCommand):
    """Base of the commands that read files: ``--project``, ``--since`` and ``--force`` too."""

    def add_arguments(self, parser):
        parser.add_argument("--project", default=None, help="Project slug: chunks restricted to its members.")
        parser.add_argument("--since", default=None, help="Only files modified since this ISO date/time.")
        parser.add_argument("--force", action="store_true", help="Re-do every file, even unchanged ones.")
        super().add_arguments(parser)
