"""``manage.py source_settings``: list, set or re-apply per-source access and property mappings."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from ingestion.models import SourceSetting
from ingestion.services import IngestError


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


class Command(BaseCommand):
    help = (
        "Per Notion database / synced folder: visibility (public, restricted --project, private --owner) and "
        "which properties become people, tags, entity, date, domain. 'set' re-applies to stored chunks "
        "without re-embedding."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="Show every setting as JSON.")
        s = sub.add_parser("set", help="Create or update a setting, then re-apply it.")
        s.add_argument("kind", choices=SourceSetting.Kind.values)
        s.add_argument("key", help="Notion database/data source id, or the folder path given to the sync.")
        s.add_argument("--name", default="")
        s.add_argument("--collection", default="")
        s.add_argument("--visibility", default="public", choices=["public", "restricted", "private"])
        s.add_argument("--project", default=None, help="Project slug (restricted).")
        s.add_argument("--owner", default=None, help="Username (private).")
        s.add_argument("--people", default="", help="Comma-separated properties whose values are people.")
        s.add_argument("--tags", default="", help="Comma-separated properties whose values are tags.")
        s.add_argument("--entity", default="")
        s.add_argument("--date", default="")
        s.add_argument("--domain", default="")
        a = sub.add_parser("apply", help="Re-apply existing settings to stored chunks.")
        a.add_argument("keys", nargs="*", help="Keys to re-apply (default: all).")

    def handle(self, *args, action: str, **opts):
        from ingestion.services.source_settings import source_setting_apply, source_setting_save

        if action == "list":
            rows = [
                {"kind": s.kind, "key": s.key, "name": s.name, "collection": s.collection, "visibility": s.visibility,
                 "project": s.project.slug if s.project_id else None,
                 "owner": s.owner.get_username() if s.owner_id else None,
                 "mapping": s.mapping, "applied_at": s.applied_at.isoformat() if s.applied_at else None}
                for s in SourceSetting.objects.select_related("project", "owner")
            ]  # fmt: skip
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if action == "set":
            mapping = {"people": _csv(opts["people"]), "tags": _csv(opts["tags"]), "entity": opts["entity"],
                       "date": opts["date"], "domain": opts["domain"]}  # fmt: skip
            try:
                setting, changed = source_setting_save(
                    kind=opts["kind"], key=opts["key"], name=opts["name"], collection=opts["collection"],
                    visibility=opts["visibility"], project=opts["project"], owner=opts["owner"], mapping=mapping,
                )  # fmt: skip
            except IngestError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(json.dumps({"setting": str(setting), "key": setting.key, "chunks_changed": changed}))
            return
        qs = SourceSetting.objects.all()
        if opts["keys"]:
            qs = qs.filter(key__in=opts["keys"])
        out = {s.key: source_setting_apply(setting=s) for s in qs}
        self.stdout.write(json.dumps({"chunks_changed": out}))
