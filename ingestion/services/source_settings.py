"""Per-source settings: visibility, project, owner and property mapping per Notion database or folder.

A setting is applied when a source is indexed and re-applied to stored chunks when it changes:
that re-application rewrites ACL and metadata columns only (the text, hence ``content_hash`` and
the embedding, is untouched). A webhook delivery may ask for a *narrower* access than its
database's setting, never a wider one; what it asked for is kept on its chunks so re-applying
a setting never widens them either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ingestion.models import SourceRoot, SourceSetting, SourceState
from ingestion.services.core import NOTION_COLLECTION, AccessWidening, IngestError, InvalidAccess, UnknownProject
from ingestion.sources.mapping import PropertyMapping, map_unit
from ingestion.sources.notion import notion_key
from rag.acl import user_hash
from rag.models import Chunk, Project
from rag.units import SourceDocument, Unit

_RANK = {"public": 0, "restricted": 1, "private": 2}
REQUESTED_KEY = "requested_access"  # chunk metadata: what a webhook delivery asked for


@dataclass(frozen=True)
class Access:
    visibility: str = "public"
    project: str | None = None  # slug
    owner_hash: str = ""

    def as_dict(self) -> dict:
        return {"visibility": self.visibility, "project": self.project}


def setting_access(setting: SourceSetting | None) -> Access:
    if setting is None:
        return Access()
    return Access(
        visibility=setting.visibility, project=setting.project.slug if setting.project_id else None,
        owner_hash=user_hash(setting.owner_id) if setting.owner_id else "",
    )  # fmt: skip


def narrowed(base: Access, requested: dict | None) -> Access:
    """``requested`` (visibility, project) if it is no wider than ``base``; else ``IngestError``.

    Narrower means: public → restricted (any project) or private (the setting's owner);
    restricted → private. A different project is another audience, so it is not narrower.
    """
    if not requested:
        return base
    visibility = requested.get("visibility") or base.visibility
    project = requested.get("project") or None
    if visibility not in _RANK:
        raise InvalidAccess(f"visibility must be one of public, restricted, private (not {visibility!r})")
    if _RANK[visibility] < _RANK[base.visibility]:
        raise AccessWidening(f"this source is {base.visibility}: a delivery cannot make it {visibility}")
    if visibility == "public":
        if project:
            raise InvalidAccess("a project is only used with visibility 'restricted'")
        return base
    if visibility == "restricted":
        project = project or base.project
        if not project:
            raise InvalidAccess("visibility 'restricted' needs a project")
        if base.visibility == "restricted" and project != base.project:
            raise AccessWidening(
                f"this source is restricted to {base.project!r}: a delivery cannot move it to {project!r}"
            )
        if not Project.objects.filter(slug=project).exists():
            raise UnknownProject(f"unknown project {project!r}")
        return Access(visibility="restricted", project=project)
    if not base.owner_hash:
        raise InvalidAccess("visibility 'private' needs an owner: set one on the source's setting")
    return Access(visibility="private", owner_hash=base.owner_hash)


def _parsed_mapping(setting: SourceSetting | None) -> PropertyMapping:
    if setting is None:
        return PropertyMapping()
    try:
        return PropertyMapping.from_dict(setting.mapping)
    except ValueError:  # saved through the admin before validation existed: apply none of it
        return PropertyMapping()


def setting_for_notion(metadata: dict) -> SourceSetting | None:
    keys = [k for k in (metadata.get("notion_data_source"), metadata.get("notion_database")) if k]
    if not keys:
        return None
    found = {s.key: s for s in SourceSetting.objects.filter(kind=SourceSetting.Kind.NOTION, key__in=keys)}
    return next((found[k] for k in keys if k in found), None)


def setting_for_root(root: SourceRoot | None) -> SourceSetting | None:
    if root is None:
        return None
    return SourceSetting.objects.filter(kind=SourceSetting.Kind.FOLDER, key=root.path).first()


def setting_for_document(doc: SourceDocument, root: SourceRoot | None = None) -> SourceSetting | None:
    if root is not None:
        return setting_for_root(root)
    if doc.collection == NOTION_COLLECTION and doc.units:
        return setting_for_notion(doc.units[0].metadata)
    return None


def apply_setting(doc: SourceDocument, setting: SourceSetting | None) -> SourceDocument:
    """Give ``doc`` its setting's access (narrowed by what a delivery asked) and mapped fields."""
    requested = doc.units[0].metadata.get(REQUESTED_KEY) if doc.units else None
    if setting is None and not requested:
        return doc
    try:
        access = narrowed(setting_access(setting), requested)
    except IngestError as exc:
        # What the delivery asked for no longer fits (setting or project changed since): refuse
        # rather than guess, since guessing could widen access. The delivery is recorded failed.
        raise ValueError(f"requested access {requested}: {exc}") from exc
    doc.visibility, doc.project, doc.owner_hash = access.visibility, access.project, access.owner_hash
    mapping = _parsed_mapping(setting)
    for unit in doc.units:
        map_unit(unit, mapping)
    return doc


def setting_fingerprint(setting: SourceSetting | None) -> str:
    if setting is None:
        return ""
    return (
        f"{setting.visibility}:{setting.project_id}:{setting.owner_id}:"
        f"{sorted(setting.mapping.items()) if isinstance(setting.mapping, dict) else ''}"
    )


# --- writes ---------------------------------------------------------------------------------------


def _chunks_of(setting: SourceSetting):
    if setting.kind == SourceSetting.Kind.NOTION:
        return Chunk.objects.filter(
            Q(metadata__notion_database=setting.key) | Q(metadata__notion_data_source=setting.key),
            collection=NOTION_COLLECTION,
        )
    keys = SourceState.objects.filter(root__path=setting.key).values_list("collection", "source_type", "source_id")
    query = Q(pk__in=[])
    for collection, source_type, source_id in keys:
        query |= Q(collection=collection, source_type=source_type, source_id=source_id)
    return Chunk.objects.filter(query)


@transaction.atomic
def source_setting_apply(*, setting: SourceSetting) -> int:
    """Re-apply ``setting`` to its stored chunks: ACL columns and mapped metadata, no re-embedding.

    Returns how many chunks changed. One transaction: a reader sees all old or all new access.
    """
    mapping = _parsed_mapping(setting)
    base = setting_access(setting)
    project_ids = dict(Project.objects.values_list("slug", "id"))
    changed: list[Chunk] = []
    fields = ["visibility", "project", "owner_hash", "metadata", "date", "domain", "concepts", "updated_at"]
    for chunk in _chunks_of(setting).select_for_update().only("pk", *fields[:-1], "chunk_uid"):
        try:
            access = narrowed(base, chunk.metadata.get(REQUESTED_KEY))
        except IngestError:  # the delivery's request no longer fits: keep whichever is stricter
            current = Access(visibility=chunk.visibility, owner_hash=chunk.owner_hash,
                             project=next((s for s, i in project_ids.items() if i == chunk.project_id),
                                          None))  # fmt: skip
            access = current if _RANK[current.visibility] > _RANK[base.visibility] else base
        unit = Unit(unit_anchor="", content="", metadata=dict(chunk.metadata), date=chunk.date,
                    domain=chunk.domain, concepts=list(chunk.concepts))  # fmt: skip
        map_unit(unit, mapping)
        new = {
            "visibility": access.visibility, "project_id": project_ids.get(access.project) if access.project else None,
            "owner_hash": access.owner_hash, "metadata": unit.metadata, "date": unit.date, "domain": unit.domain,
            "concepts": sorted(set(unit.concepts)),
        }  # fmt: skip
        if any(getattr(chunk, k) != v for k, v in new.items()):
            for k, v in new.items():
                setattr(chunk, k, v)
            chunk.updated_at = timezone.now()
            changed.append(chunk)
    if changed:
        Chunk.objects.bulk_update(changed, fields, batch_size=500)
    SourceSetting.objects.filter(pk=setting.pk).update(applied_at=timezone.now())
    return len(changed)


def source_setting_save(
    *, kind: str, key: str, name: str = "", collection: str = "", visibility: str = "public",
    project: str | None = None, owner: str | None = None, mapping: dict | None = None, apply: bool = True,
) -> tuple[SourceSetting, int]:  # fmt: skip
    """Create or update a setting (validated), then re-apply it to stored chunks."""
    if kind not in SourceSetting.Kind.values:
        raise IngestError(f"kind must be one of {', '.join(SourceSetting.Kind.values)}")
    if not key or not key.strip():
        raise IngestError("key is required: a Notion database/data source id or a folder path")
    if kind == SourceSetting.Kind.NOTION:
        key = notion_key(key)
    else:  # folder syncs remember their root as an absolute path
        key = str(Path(key.strip()).expanduser().resolve())
    if visibility not in _RANK:
        raise IngestError("visibility must be public, restricted or private")
    project_obj = None
    if project:
        project_obj = Project.objects.filter(slug=project).first()
        if project_obj is None:
            raise IngestError(f"unknown project {project!r}")
    if visibility == "restricted" and project_obj is None:
        raise IngestError("visibility 'restricted' needs a project")
    if visibility != "restricted" and project_obj is not None:
        raise IngestError("a project is only used with visibility 'restricted'")
    owner_obj = None
    if owner:
        owner_obj = get_user_model().objects.filter(username=owner).first()
        if owner_obj is None:
            raise IngestError(f"unknown user {owner!r}")
    if visibility == "private" and owner_obj is None:
        raise IngestError("visibility 'private' needs an owner")
    try:
        parsed = PropertyMapping.from_dict(mapping)
    except ValueError as exc:
        raise IngestError(str(exc)) from exc
    with transaction.atomic():
        setting, _ = SourceSetting.objects.update_or_create(
            kind=kind, key=key,
            defaults={"name": name, "collection": collection, "visibility": visibility, "project": project_obj,
                      "owner": owner_obj if visibility == "private" else None, "mapping": parsed.as_dict()},
        )  # fmt: skip
        changed = source_setting_apply(setting=setting) if apply else 0
    return setting, changed
