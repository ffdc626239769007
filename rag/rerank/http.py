"""A Cohere-style ``/rerank`` endpoint, as Jina, TEI, vLLM, Infinity and Cohere serve it.

Request ``{model, query, documents, top_n}``; reply ``{"results": [{"index", "relevance_score"}]}``
(TEI answers a bare list of ``{"index", "score"}``; both are read).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from rag.rerank.base import Ranked, RerankError, validated


class HttpReranker:
    def __init__(self, *, url: str, model: str = "", api_key: str = ""):
        if not url:
            raise RerankError("KNOWHUB_RERANK_URL is not set (e.g. http://localhost:8080/rerank)")
        self.url = url
        self.model = model
        self.api_key = api_key
        self.name = f"http:{model or url}"

    def rerank(self, *, query: str, documents: list[str], top_n: int, timeout: float) -> list[Ranked]:
        body = {"query": query, "documents": documents, "top_n": top_n, "return_documents": False}
        if self.model:
            body["model"] = self.model
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (configured URL)
                raw = response.read(5 * 1024 * 1024)
        except urllib.error.HTTPError as exc:
            raise RerankError(f"rerank server answered HTTP {exc.code}") from exc
        except TimeoutError as exc:
            raise RerankError(f"rerank server did not answer within {timeout:g}s") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise RerankError(f"rerank server unreachable: {exc}") from exc
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RerankError("rerank reply is not JSON") from exc
        items = data.get("results") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise RerankError("rerank reply has no 'results' list")
        pairs = []
        for item in items:
            if not isinstance(item, dict) or "index" not in item:
                raise RerankError(f"malformed rerank result {item!r:.100}")
            score = item.get("relevance_score", item.get("score"))
            pairs.append((item["index"], score))
        ranked = validated(pairs, count=len(documents))
        return sorted(ranked, key=lambda r: -r.score)[:top_n]
