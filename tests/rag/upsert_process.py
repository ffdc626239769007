"""Run by test_concurrency in a separate process: upsert one source and print the result."""

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "knowhub.settings")
django.setup()

from rag.services import chunk_upsert  # noqa: E402
from rag.units import SourceDocument, Unit  # noqa: E402

version = sys.argv[1]
text = " ".join(f"Version {version} sentence {i} explains promises and the microtask queue." for i in range(60))
doc = SourceDocument(
    collection="notes", source_type="note", source_id="shared-source",
    units=[Unit(unit_anchor="u0", content=text, title="Promises")], chunk_size=400, chunk_overlap=60,
)  # fmt: skip
print(json.dumps(chunk_upsert(documents=[doc]).as_dict()))
