"""Import realms and topics from JSON files (default: sessions/data), upserting by slug."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from sessions.content import ContentError
from sessions.services import learning_content_import


class Command(BaseCommand):
    help = (
        "Create or update learning realms and topics from JSON files, by slug (idempotent). "
        "PATH is a folder (realms/ and topics/ inside, or any *.json) or one file; default: the shipped content."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default=None, help="folder or file; default sessions/data")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, path=None, json=False, **options):
        try:
            result = learning_content_import(path=path)
        except ContentError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        out = result.as_dict()
        if json:
            self.stdout.write(_dumps(out))
            return
        self.stdout.write(
            f"realms: {out['realms_created']} created, {out['realms_updated']} updated, "
            f"{out['realms_unchanged']} unchanged; "
            f"topics: {out['topics_created']} created, {out['topics_updated']} updated, "
            f"{out['topics_unchanged']} unchanged "
            f"({len(out['files'])} files)"
        )


def _dumps(data) -> str:
    return json.dumps(data, indent=2)
