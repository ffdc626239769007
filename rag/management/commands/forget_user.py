"""``manage.py forget_user``: delete a user and their personal data (rag.privacy.user_forget)."""

from __future__ import annotations

import json
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Delete a user with their private chunks (session artifacts, reflections, private documents) "
        "and those chunks' history, and anonymise their interactions and judgments; one transaction."
    )

    def add_arguments(self, parser):
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--username")
        who.add_argument("--id", type=int)
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument("--json", action="store_true", help="print what was removed as JSON")

    def handle(self, *args, username=None, id=None, yes=False, json=False, **opts):
        from rag.privacy import user_forget

        User = get_user_model()
        lookup = {"pk": id} if id is not None else {User.USERNAME_FIELD: username}
        user = User.objects.filter(**lookup).first()
        if user is None:
            raise CommandError(f"no user with {lookup}")
        if not yes and not _confirmed(f"Forget user {user.get_username()!r} (id {user.pk}) for good? [y/N] "):
            raise CommandError("aborted; nothing changed")
        result = user_forget(user=user).as_dict()
        _vacuum()
        self.stdout.write(_dump(result) if json else ", ".join(f"{k}: {v}" for k, v in result.items()))


# Tables whose rows held the user's words: an UPDATE or DELETE leaves the old row version on its
# page until VACUUM removes it, and until then it can be read from the files.
SCRUBBED_TABLES = ("feedback_interaction", "feedback_judgment", "feedback_judgmentlog", "feedback_gradecontest",
                   "rag_chunk", "rag_chunkhistory", "rag_conversation", "learning_sessions_sessionevent")


def _vacuum() -> None:
    """VACUUM the tables the user's words were in (after the commit: VACUUM cannot run inside a
    transaction, so a caller's own transaction skips it; autovacuum gets there later)."""
    from django.db import connection

    if connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        for table in SCRUBBED_TABLES:
            cursor.execute(f'VACUUM "{table}"')


def _confirmed(prompt: str) -> bool:
    """Ask on the terminal; with none (a script, cron, CI) there is no one to answer, so refuse
    with what to do instead of failing on the closed input."""
    if not sys.stdin or not sys.stdin.isatty():
        raise CommandError(
            "no terminal to confirm on: nothing changed. Run with --yes to forget the user without asking."
        )
    try:
        return input(prompt).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
