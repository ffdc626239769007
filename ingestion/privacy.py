"""Personal data the ingestion app holds: stored payloads and sync states of private documents.

``rag.privacy`` re-keys and forgets users across the project; this is ingestion's part, which
``IngestionConfig.ready`` registers (``rag.privacy.register_personal_data``).
"""

from __future__ import annotations

import hashlib
import json

from ingestion.models import IngestedDocument, SourceState


def personal_data_rekey(*, mapping: dict[str, str]) -> dict[str, int]:
    """Stored payloads of private documents carry the owner's pseudonym (a reindex rebuilds
    their chunks from them): move them to the new pseudonyms (``{old: new}``)."""
    n = 0
    for item in IngestedDocument.objects.filter(payload__owner_hash__in=list(mapping)):
        payload = {**item.payload, "owner_hash": mapping[item.payload["owner_hash"]]}
        item.payload = payload
        item.payload_hash = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        item.save(update_fields=["payload", "payload_hash", "updated_at"])
        n += 1
    return {"documents": n}


def personal_data_forget(*, user, hashes: set[str], chunk_uids: set[str], sources: set) -> dict[str, int]:
    """Delete the stored payloads of the user's private documents and the sync states of the
    sources of their private chunks, which would bring those chunks back on a reindex."""
    documents, _ = IngestedDocument.objects.filter(payload__owner_hash__in=list(hashes)).delete()
    for collection, source_type, source_id in sources:
        SourceState.objects.filter(collection=collection, source_type=source_type, source_id=source_id).delete()
    return {"documents": documents}


def personal_data_export(*, user, hashes: set[str]) -> dict:
    """The stored payloads of the user's private documents (``manage.py export_user``)."""
    return {
        "stored_documents": list(
            IngestedDocument.objects.filter(payload__owner_hash__in=list(hashes))
            .order_by("collection", "source_type", "source_id")
            .values("collection", "source_type", "source_id", "payload", "created_at", "updated_at")
        )
    }
