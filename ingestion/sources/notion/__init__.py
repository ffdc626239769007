"""Notion pages → ``SourceDocument``s: API block trees, page properties, the n8n webhook, a puller.

Nothing here writes to the database. ``puller`` talks to the API and hands back page and block
dicts; ``blocks`` turns block trees into markdown, ``properties`` property values into plain
JSON, ``pages`` a page into a document, and ``webhook`` checks and converts an n8n delivery.
Unknown block or property types are skipped with a log line, never an exception: Notion adds
types more often than we release.
"""

from ingestion.sources.notion.blocks import blocks_to_markdown, plain_text, rich_text_to_markdown
from ingestion.sources.notion.pages import canonical_page_id, notion_key, page_title, page_to_document
from ingestion.sources.notion.properties import properties_to_metadata, property_value
from ingestion.sources.notion.puller import NotionPuller, NotionPullError
from ingestion.sources.notion.webhook import WebhookDelivery, webhook_delivery, webhook_to_document

__all__ = [
    "NotionPullError", "NotionPuller", "WebhookDelivery", "blocks_to_markdown", "canonical_page_id", "notion_key",
    "page_title", "page_to_document", "plain_text", "properties_to_metadata", "property_value",
    "rich_text_to_markdown", "webhook_delivery", "webhook_to_document",
]  # fmt: skip
