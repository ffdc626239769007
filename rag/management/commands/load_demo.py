"""``manage.py load_demo``: the demo admin, token and corpus (idempotent), for ``make demo``."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from rag.demo import demo_extra_loaders, demo_load


class Command(BaseCommand):
    help = "Create the demo admin and API token and index the demo corpus. Safe to run again."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        result = demo_load(credentials_path=Path(settings.BASE_DIR) / "var" / "demo-credentials.json")
        # Other apps add demo content through loaders they register (rag.demo.register_demo_loader).
        extras = {name: load() for name, load in demo_extra_loaders().items()}
        result["extras"] = extras
        if options["json"]:
            self.stdout.write(json.dumps(result, default=str))
            return
        index = result["index"]
        self.stdout.write(
            f"demo corpus: {index['created']} created, {index['updated']} updated, "
            f"{index['unchanged']} unchanged, {index['embedded']} embedded"
        )
        for name, extra in extras.items():
            self.stdout.write(f"{name}: {extra}")
