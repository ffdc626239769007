"""``manage.py embedded_db status|stop|url``: the embedded PostgreSQL under var/pgdata."""

from django.conf import settings
from django.core.management.base import BaseCommand

from knowhub import embedded_db


class Command(BaseCommand):
    help = "Show, stop or print the URL of the embedded PostgreSQL (the default database)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "stop", "url"])

    def handle(self, *args, action, **options):
        if settings.KNOWHUB_DATABASE != "embedded":
            self.stdout.write("DATABASE_URL is set: knowhub is not using the embedded server.")
            return
        if action == "url":
            self.stdout.write(settings.DATABASE_URL)
        elif action == "status":
            self.stdout.write(f"embedded PostgreSQL running, data in {embedded_db._pgdata(settings.BASE_DIR)}")
        else:
            from django.db import connections

            connections.close_all()
            stopped = embedded_db.stop(settings.BASE_DIR)
            self.stdout.write("stopped" if stopped else "was not running")
