"""Bounded extraction: every file's text is read in a child process with a wall-clock limit, a
memory limit and zip checks, so a hostile or broken file costs that file, never a web thread.

The child (``ingestion.sources.extract_worker``) sets its own RLIMIT_AS and RLIMIT_CPU and runs
in a session of its own, so a timeout kills it and anything it started (pdftoppm, tesseract).
Each bound becomes a ``FileExtractError`` naming it; the caller records it against the file and
writes nothing of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from django.conf import settings

from ingestion.sources.files import Bounds, Extracted, FileExtractError


def bounds() -> Bounds:
    return Bounds(
        max_unzipped_bytes=settings.KNOWHUB_EXTRACT_MAX_UNZIPPED_BYTES,
        max_zip_ratio=settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO,
        ocr=settings.KNOWHUB_OCR_ENABLED,
        ocr_max_pages=settings.KNOWHUB_OCR_MAX_PAGES,
    )


def extract_file(path: Path | str, *, name: str) -> Extracted:
    """The text of the file at ``path`` (named ``name``), or ``FileExtractError`` saying why not."""
    timeout = settings.KNOWHUB_EXTRACT_TIMEOUT_S
    memory = settings.KNOWHUB_EXTRACT_MEMORY_BYTES
    request = {
        "path": str(path), "name": name, "bounds": asdict(bounds()), "memory_bytes": memory,
        "cpu_seconds": int(timeout) + 1,
    }  # fmt: skip
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingestion.sources.extract_worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=str(settings.BASE_DIR), env=env, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(json.dumps(request).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise FileExtractError(
            f"reading the file took longer than {timeout:g} s (KNOWHUB_EXTRACT_TIMEOUT_S) and was stopped: "
            "a decompression bomb, or too large to read here"
        ) from None
    finally:
        if proc.poll() is None:
            _kill(proc)
    try:
        answer = json.loads(out.decode("utf-8")) if out else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        answer = {}
    if answer.get("error") == "memory" or (not answer and _out_of_memory(proc.returncode, err)):
        raise FileExtractError(
            f"reading the file needed more than {memory // (1024 * 1024)} MB (KNOWHUB_EXTRACT_MEMORY_BYTES) "
            "and was stopped: a decompression bomb, or too large to read here"
        )
    if answer.get("error"):
        raise FileExtractError(answer["error"])
    if "ok" not in answer:
        if proc.returncode == -signal.SIGXCPU:
            raise FileExtractError(f"reading the file used more than {timeout:g} s of CPU and was stopped")
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
        raise FileExtractError(f"the file could not be read (the reader stopped: {' '.join(tail) or proc.returncode})")
    return Extracted.from_dict(answer["ok"])


def _out_of_memory(returncode: int | None, err: bytes) -> bool:
    return returncode in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT) or b"MemoryError" in (err or b"") or (
        b"std::bad_alloc" in (err or b"")
    )


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
