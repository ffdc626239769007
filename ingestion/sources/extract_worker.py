"""The child process of bounded extraction: ``python -m ingestion.sources.extract_worker``.

Reads a JSON request (``path``, ``name``, ``bounds``, ``memory_bytes``, ``cpu_seconds``) on
stdin, limits its own address space and CPU time, extracts, and writes one JSON line on stdout:
``{"ok": <Extracted>}`` or ``{"error": "<sentence>"}``. Imports no Django: it starts fast and
shares nothing with the web process that waits for it.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path


def _limit(memory_bytes: int, cpu_seconds: int) -> None:
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_seconds > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))


def run(request: dict) -> dict:
    from ingestion.sources.files import Bounds, FileExtractError, extract, suffix_of

    kind = suffix_of(request["name"]).lstrip(".").upper() or "file"
    try:
        data = Path(request["path"]).read_bytes()
        extracted = extract(data, name=request["name"], bounds=Bounds(**request.get("bounds", {})))
    except FileExtractError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"error": "memory"}
    except RecursionError:
        return {"error": f"the {kind} is nested too deeply to read"}
    except Exception as exc:  # any parser failure is this file's problem, said in one sentence
        text = str(exc)
        # libxml2 failing an allocation under RLIMIT_AS surfaces as lxml's "unknown error".
        if "memory" in text.lower() or (type(exc).__name__ == "XMLSyntaxError" and "unknown error" in text):
            return {"error": "memory"}
        return {"error": f"corrupt or unreadable {kind}: {type(exc).__name__}: {text[:300]}"}
    return {"ok": extracted.as_dict()}


def main() -> int:
    request = json.loads(sys.stdin.read())
    _limit(int(request.get("memory_bytes") or 0), int(request.get("cpu_seconds") or 0))
    try:
        answer = run(request)
    except MemoryError:
        answer = {"error": "memory"}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
