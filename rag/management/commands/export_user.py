"""``manage.py export_user``: everything knowhub holds about one user, as JSON (access requests)."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder


class Command(BaseCommand):
    help = (
        "Print (or write to --output) one user's data as JSON: account, projects, conversations, questions and "
        "answers, feedback, judgments, learning sessions with their chat, private chunks and stored documents."
    )

    def add_arguments(self, parser):
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--username")
        who.add_argument("--id", type=int)
        parser.add_argument("--output", help="write to this file instead of standard output")

    def handle(self, *args, username=None, id=None, output=None, **opts):
        from rag.privacy import user_export

        User = get_user_model()
        lookup = {"pk": id} if id is not None else {User.USERNAME_FIELD: username}
        user = User.objects.filter(**lookup).first()
        if user is None:
            raise CommandError(f"no user with {lookup}")
        text = json.dumps(user_export(user=user), cls=DjangoJSONEncoder, indent=2, ensure_ascii=False)
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            self.stderr.write(f"wrote the data of {user.get_username()!r} to {output}")
        else:
            self.stdout.write(text)
