"""``manage.py health [--json]``: what /health reports, for the terminal."""

import json

from django.core.management.base import BaseCommand, CommandError

from rag.selectors import health_status


class Command(BaseCommand):
    help = "Check the database, pgvector, the embedding provider and the broker."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the status as JSON")

    def handle(self, *args, **options):
        status = health_status()
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2, default=str))
        else:
            for name, part in status.items():
                if name == "ok":
                    continue
                detail = ", ".join(f"{k}={v}" for k, v in part.items() if k != "status")
                self.stdout.write(f"{name:10} {part['status']:8} {detail}")
        if not status["ok"]:
            raise CommandError("knowhub is not healthy")
