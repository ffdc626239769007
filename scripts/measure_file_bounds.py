"""Measure how the web process fares against the DOCX decompression bombs of issue 25.

    .venv/bin/python scripts/measure_file_bounds.py [--no-zip-check]

Posts each bomb to ``POST /ingest/files`` (dry run: nothing is stored) through Django's test
client, so the whole view runs in *this* process, which stands in for the web process. Prints,
per bomb, the answer, the seconds until it came, and how much this process's resident memory
grew at its peak (sampled every 20 ms). ``--no-zip-check`` lifts the zip ratio/size checks so the
wall-clock and memory bounds of the extraction child are what refuses the files.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "knowhub.settings")


class PeakRss:
    def __init__(self):
        import psutil

        self.proc = psutil.Process()
        self.base = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-zip-check", action="store_true", help="let the bombs past the zip checks")
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.test import Client

    from tests.ingestion.bombs import BOMBS

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    if args.no_zip_check:
        settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO = 1e12
        settings.KNOWHUB_EXTRACT_MAX_UNZIPPED_BYTES = 10**13
    call_command("migrate", verbosity=0)
    staff, _ = get_user_model().objects.get_or_create(username="bench-file-bounds", defaults={"is_staff": True})
    client = Client()
    client.force_login(staff)
    print(f"extraction bounds: {settings.KNOWHUB_EXTRACT_TIMEOUT_S:g} s, "
          f"{settings.KNOWHUB_EXTRACT_MEMORY_BYTES // (1024 * 1024)} MB, zip ratio "
          f"{settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO:g}×")  # fmt: skip
    worst_s = worst_mb = 0.0
    for name, build in BOMBS.items():
        data = build()
        upload = SimpleUploadedFile(f"{name}.docx", data)
        with PeakRss() as rss:
            start = time.perf_counter()
            response = client.post("/ingest/files", {"files": [upload], "dry_run": "true"}, secure=True)
            took = time.perf_counter() - start
        grown = (rss.peak - rss.base) / (1024 * 1024)
        body = response.json() if response.get("Content-Type", "").startswith("application/json") else {
            "detail": response.content[:200].decode("utf-8", "replace")}
        error = (body.get("files") or [{}])[0].get("error") or body.get("detail") or ""
        print(f"{name:24} {len(data) / 1024:8.0f} KB  HTTP {response.status_code}  {took:6.2f} s  "
              f"web process +{grown:6.1f} MB  {error[:110]}")  # fmt: skip
        worst_s, worst_mb = max(worst_s, took), max(worst_mb, grown)
        del data, upload
    print(f"worst: {worst_s:.2f} s, +{worst_mb:.1f} MB (targets: <= 20 s, <= 600 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
