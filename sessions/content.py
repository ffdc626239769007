"""Realm and topic files: their JSON schemas, loading and the idempotent upsert by slug.

The upsert takes the model classes as arguments so the data migration can run it with the
historical models (``apps.get_model``) and the management command with the real ones.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import jsonschema

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"

_SLUG = {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$", "minLength": 1, "maxLength": 100}
_TEXT = {"type": "string", "minLength": 1}
_ROLES = {"type": "array", "items": {"type": "string", "pattern": r"^[a-z]+$"}}

REALM_SCHEMA = {
    "type": "object",
    "required": ["slug", "name", "symbols"],
    "additionalProperties": False,
    "properties": {
        "slug": _SLUG,
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": {"type": "string"},
        "order": {"type": "integer", "minimum": 0},
        "is_active": {"type": "boolean"},
        "symbols": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "meaning"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 60},
                    "meaning": _TEXT,
                    # What the symbol does (sessions.guide.roles): suggestions match it to concepts.
                    "roles": _ROLES,
                },
            },
        },
        "hints": {"type": "array", "items": _TEXT},
    },
}

TOPIC_SCHEMA = {
    "type": "object",
    "required": ["slug", "title", "domain", "entities", "truths", "misconceptions", "tests"],
    "additionalProperties": False,
    "properties": {
        "slug": _SLUG,
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "domain": {"type": "string", "minLength": 1, "maxLength": 100},
        "summary": {"type": "string"},
        "order": {"type": "integer", "minimum": 0},
        "is_active": {"type": "boolean"},
        "realms": {"type": "array", "items": _SLUG},
        "entities": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "description"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 100},
                    "description": _TEXT,
                    # The behaviour in everyday words: what symbol suggestions are matched on.
                    "gist": {"type": "string"},
                    # What the concept does (sessions.guide.roles): symbols playing it are suggested first.
                    "roles": _ROLES,
                },
            },
        },
        "truths": {"type": "array", "minItems": 1, "items": _TEXT},
        "misconceptions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["claim", "correction"],
                "additionalProperties": False,
                "properties": {"claim": _TEXT, "correction": _TEXT},
            },
        },
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["question", "expected"],
                "additionalProperties": False,
                "properties": {
                    "question": _TEXT,
                    # Code the question is about, kept on its own lines (shown as a code block).
                    "code": _TEXT,
                    "expected": _TEXT,
                    "keywords": {"type": "array", "items": _TEXT},
                    # The exact value a teacher accepts on its own ("1", "a c b", "no").
                    "value": _TEXT,
                    # The rubric a teacher reads terse answers with (sessions.rubric): the parts the
                    # question asks for, each with its patterns, and statements that refute an answer.
                    "parts": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "any"],
                            "additionalProperties": False,
                            "properties": {"name": _TEXT, "any": {"type": "array", "minItems": 1, "items": _TEXT}},
                        },
                    },
                    "refuted_by": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["says", "why"],
                            "additionalProperties": False,
                            "properties": {"says": _TEXT, "why": _TEXT},
                        },
                    },
                    # Answers to measure the grader with (evaluate_session_scoring); never graded on.
                    "eval": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "short": _TEXT,
                            "paraphrases": {"type": "array", "items": _TEXT},
                            "wrong": {"type": "array", "items": _TEXT},
                            "holdout": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "paraphrases": {"type": "array", "items": _TEXT},
                                    "wrong": {"type": "array", "items": _TEXT},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


class ContentError(ValueError):
    """A realm or topic file that cannot be imported; the message names the file and the field."""


@dataclass
class ImportResult:
    realms_created: int = 0
    realms_updated: int = 0
    realms_unchanged: int = 0
    topics_created: int = 0
    topics_updated: int = 0
    topics_unchanged: int = 0
    files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def sentence(self) -> str:
        """What was imported, in words (``load_demo`` prints it)."""
        return (
            f"Learning content ({len(self.files)} files): realms {self.realms_created} created, "
            f"{self.realms_updated} updated, {self.realms_unchanged} unchanged; topics {self.topics_created} "
            f"created, {self.topics_updated} updated, {self.topics_unchanged} unchanged."
        )


def _validate(data, schema: dict, source: str) -> dict:
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ContentError(f"{source}: {where}: {exc.message}") from None
    return data


def _read(path: Path) -> list[dict]:
    """A file holds one object or a list of objects."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ContentError(f"{path}: invalid JSON ({exc})") from None
    return data if isinstance(data, list) else [data]


def load_content(path: Path | str | None = None) -> tuple[list[dict], list[dict], list[str]]:
    """Read and validate every realm and topic file under ``path`` (default: the shipped data).

    ``path`` is a folder with ``realms/`` and ``topics/`` sub-folders, or a folder/file whose
    objects are told apart by shape (a realm has ``symbols``, a topic has ``entities``).
    Nothing is returned unless every file is valid, so an import is all or nothing.
    """
    root = Path(path) if path else DATA_DIR
    if not root.exists():
        raise ContentError(f"{root}: no such file or folder")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    realms: list[dict] = []
    topics: list[dict] = []
    for file in files:
        for i, obj in enumerate(_read(file)):
            source = f"{file}[{i}]" if file.suffix else str(file)
            if not isinstance(obj, dict):
                raise ContentError(f"{source}: expected a JSON object")
            kind = "realm" if "symbols" in obj or file.parent.name == "realms" else "topic"
            if kind == "realm":
                realms.append(_validate(obj, REALM_SCHEMA, source))
            else:
                topics.append(_validate(obj, TOPIC_SCHEMA, source))
    for kind, items in (("realm", realms), ("topic", topics)):
        slugs = [item["slug"] for item in items]
        dupes = sorted({s for s in slugs if slugs.count(s) > 1})
        if dupes:
            raise ContentError(f"{kind} slug(s) defined twice: {', '.join(dupes)}")
    return realms, topics, [str(f) for f in files]


_REALM_FIELDS = ("name", "description", "symbols", "hints", "order", "is_active")
_TOPIC_FIELDS = ("title", "domain", "summary", "entities", "truths", "misconceptions", "tests", "order", "is_active")
_DEFAULTS = {"description": "", "hints": [], "order": 0, "is_active": True, "summary": "", "misconceptions": []}


def _upsert(model, data: dict, fields: tuple[str, ...]) -> tuple[object, str]:
    values = {f: data.get(f, _DEFAULTS.get(f)) for f in fields}
    obj = model.objects.filter(slug=data["slug"]).first()
    if obj is None:
        return model.objects.create(slug=data["slug"], **values), "created"
    changed = [f for f, v in values.items() if getattr(obj, f) != v]
    if not changed:
        return obj, "unchanged"
    for f in changed:
        setattr(obj, f, values[f])
    obj.save(update_fields=[*changed, "updated_at"])
    return obj, "updated"


def upsert_content(*, realms: list[dict], topics: list[dict], realm_model, topic_model) -> ImportResult:
    """Create or update realms and topics by slug. Rows not in the files are left alone."""
    result = ImportResult()
    for data in realms:
        _, outcome = _upsert(realm_model, data, _REALM_FIELDS)
        setattr(result, f"realms_{outcome}", getattr(result, f"realms_{outcome}") + 1)
    for data in topics:
        topic, outcome = _upsert(topic_model, data, _TOPIC_FIELDS)
        wanted = set(data.get("realms", []))
        known = dict(realm_model.objects.filter(slug__in=wanted).values_list("slug", "pk"))
        missing = wanted - set(known)
        if missing:
            raise ContentError(f"topic {data['slug']}: unknown realm(s) {', '.join(sorted(missing))}")
        current = set(topic.realms.values_list("slug", flat=True))
        if current != wanted:
            topic.realms.set(list(known.values()))
            outcome = "updated" if outcome == "unchanged" else outcome
        setattr(result, f"topics_{outcome}", getattr(result, f"topics_{outcome}") + 1)
    return result
