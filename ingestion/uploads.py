"""Uploaded files on disk: a capped upload handler and the ``Upload`` list services take.

Every upload view streams files to temporary files (never into memory, never copied) and stops
writing a file once it passes the per-file limit, so a 25 MB + 1 byte file costs 25 MB of disk at
most and answers 413; its full size is still counted, which is what the view checks.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from ingestion.services.files import Upload


class CappedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Streams each file to a temporary file, dropping bytes past the per-file limit (+1)."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self._written = 0

    def receive_data_chunk(self, raw_data, start):
        cap = settings.KNOWHUB_INGEST_MAX_FILE_BYTES + 1
        room = cap - self._written
        if room > 0:
            piece = raw_data[:room]
            self.file.write(piece)
            self._written += len(piece)
        return None  # the parser still counts every byte into the file's size


def use_disk_uploads(request) -> None:
    """Make ``request`` stream its files to capped temporary files; call before anything reads
    ``request.POST`` / ``request.FILES`` (DRF's CSRF check does, inside authentication)."""
    request.upload_handlers = [CappedTemporaryFileUploadHandler(request)]


@contextlib.contextmanager
def uploads_on_disk(files: Iterable) -> Iterator[list[Upload]]:
    """Django ``UploadedFile``s → ``Upload``s with a path; one held in memory is spooled to a
    temporary file (deleted on exit)."""
    made: list[Path] = []
    uploads: list[Upload] = []
    try:
        for f in files:
            path = getattr(f, "temporary_file_path", None)
            if path is not None:
                uploads.append(Upload(name=f.name, path=Path(path()), size=f.size))
                continue
            with tempfile.NamedTemporaryFile(prefix="knowhub-upload-", delete=False) as tmp:
                for chunk in f.chunks():
                    tmp.write(chunk)
            made.append(Path(tmp.name))
            uploads.append(Upload(name=f.name, path=made[-1], size=f.size))
        yield uploads
    finally:
        for path in made:
            path.unlink(missing_ok=True)
