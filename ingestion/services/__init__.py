"""Ingestion services: every source → ``SourceDocument``s → ``rag.services.chunk_upsert``.

Each public function records what it did on an ``IngestRun`` (counts, per-document errors,
duration) that the admin shows while it runs. A document that fails is recorded and skipped;
the batch goes on. A dry run goes the same way through ``chunk_upsert(dry_run=True)``, which
counts every write it would make, and writes nothing to the index nor to the sync state.

Removal rules, the same for every source: a source that is unpublished or no longer exists is
taken out of search (soft delete: its chunks stay stored and come back when it does); with
``prune`` those chunks are deleted for good (their text stays in ``ChunkHistory``). Files a
folder sync no longer finds, and CMS objects deleted in the admin, are deleted outright.

Modules: ``core`` (runs, the shared upsert path, removals), ``cms``, ``folders``
(fingerprints, Logseq/markdown), ``notion`` (webhook deliveries, pull), ``documents``,
``reindexing``.
"""

from ingestion.services.cms import (
    CMS,
    cms_enqueue,
    cms_reindex_objects,
    cms_targets,
    page_ids_for,
    sync_cms,
)
from ingestion.services.core import (
    ALL_TYPES,
    CMS_TYPES,
    NOTION_COLLECTION,
    TYPE_HELP,
    IngestError,
    RunRecorder,
    UnknownProject,
    index_documents,
    run_create,
)
from ingestion.services.documents import (
    ParsedPayload,
    documents_from_payloads,
    documents_ingest,
    ingest_document_paths,
)
from ingestion.services.files import (
    FileOutcome,
    FilesResult,
    Upload,
    chunk_file,
    file_for_download,
    files_ingest,
    store_original,
)
from ingestion.services.folders import Candidate, sync_candidates, sync_markdown
from ingestion.services.notion import (
    DeliveryReceipt,
    notion_client_from_settings,
    notion_deliveries_due,
    notion_delivery_process,
    notion_delivery_receive,
    notion_sync,
    notion_webhook_secret,
)
from ingestion.services.reindexing import (
    normalise_types,
    reindex,
    reindex_enqueue,
    run_resume,
    runs_mark_interrupted,
    runs_sweep,
)

__all__ = [
    "ALL_TYPES", "TYPE_HELP", "CMS", "CMS_TYPES", "NOTION_COLLECTION", "Candidate", "DeliveryReceipt", "IngestError",
    "ParsedPayload", "RunRecorder", "UnknownProject", "cms_enqueue", "cms_reindex_objects", "cms_targets",
    "documents_from_payloads",
    "documents_ingest", "index_documents", "ingest_document_paths", "normalise_types", "notion_client_from_settings",
    "notion_deliveries_due", "notion_delivery_process", "notion_delivery_receive", "notion_sync",
    "notion_webhook_secret", "page_ids_for", "reindex", "reindex_enqueue", "run_create",
    "run_resume", "runs_mark_interrupted", "runs_sweep",
    "sync_candidates", "sync_cms", "sync_markdown", "FileOutcome", "FilesResult", "Upload", "chunk_file",
    "file_for_download", "files_ingest", "store_original",
]  # fmt: skip
