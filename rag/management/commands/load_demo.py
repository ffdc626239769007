"""``manage.py load_demo``: the demo admin, token and corpus (idempotent), for ``make demo``."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from rag.demo import demo_extra_loaders, demo_index_follow_runtime, demo_load


class Command(BaseCommand):
    help = "Create the demo admin and API token and index the demo corpus. Safe to run again."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        moved = demo_index_follow_runtime()
        if moved and not options["json"]:
            self.stdout.write(
                f"The local model's runtime changed: {moved['reembedded']} chunks re-embedded with {moved['model']} "
                "(manage.py reembed does the same on any index)."
            )
        result = demo_load(credentials_path=Path(settings.BASE_DIR) / "var" / "demo-credentials.json")
        # Other apps add demo content through loaders they register (rag.demo.register_demo_loader).
        extras = {name: load() for name, load in demo_extra_loaders().items()}
        result["extras"] = {n: e.as_dict() if hasattr(e, "as_dict") else e for n, e in extras.items()}
        if options["json"]:
            self.stdout.write(json.dumps(result, default=str))
            return
        index = result["index"]
        run = f" (ingest run #{index['run_id']})" if index.get("run_id") else ""
        self.stdout.write(
            f"Demo corpus (team handbook, engineering notes, meeting notes): {index['created']} chunks created, "
            f"{index['updated']} updated, {index['unchanged']} unchanged, {index['embedded']} embedded{run}."
        )
        self.stdout.write(
            f"Sign in to /admin/ as {result['username']}; the password is in var/demo-credentials.json."
        )
        for name, extra in extras.items():
            self.stdout.write(describe_extra(name, extra))


def describe_extra(name: str, extra) -> str:
    """One sentence for what a registered demo loader did: its own ``sentence()`` if it has one,
    else its counts in words (never a Python repr)."""
    if hasattr(extra, "sentence"):
        return extra.sentence()
    if hasattr(extra, "as_dict"):
        extra = extra.as_dict()
    if isinstance(extra, dict):
        counts = [f"{v} {k.replace('_', ' ')}" for k, v in extra.items() if isinstance(v, int | bool)]
        return f"{name}: " + (", ".join(counts) if counts else "done") + "."
    return f"{name}: {extra}."
