"""Source models (admin-managed content, Notion, markdown folders, documents) and ingest runs."""
