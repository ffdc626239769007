"""The rerank stage: a reranker's order is served, and any failure serves the fused order.

The HTTP tests run against ``FakeRerankServer`` (a FAKE local server, labelled as such): they are
about how knowhub handles a /rerank endpoint's replies, errors and timeouts, not about ranking
quality. Search itself uses the real database and the real local embedding model.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from feedback.models import Interaction
from rag.llm.base import Completion
from rag.rerank import RerankError, get_reranker, rerank_hits
from rag.rerank.http import HttpReranker
from rag.rerank.llm import LlmReranker
from tests.rag.factories import load, topic_corpus
from tests.rag.fake_rerank_server import FakeRerankServer

URL = "/rag/query"
# Hybrid ranks the closures page first for this query; the fake server is told to prefer the
# mitochondria page, so a served order starting with it can only be the reranker's.
QUERY = "How do closures capture variables?"


@pytest.fixture
def server():
    with FakeRerankServer() as srv:
        yield srv


@pytest.fixture
def corpus(db, local_embedder):
    load(topic_corpus(), local_embedder)


@pytest.fixture
def client(api_client, user):
    api_client.force_authenticate(user)
    return api_client


@pytest.fixture
def http_rerank(settings, server):
    settings.KNOWHUB_RERANK_PROVIDER = "http"
    settings.KNOWHUB_RERANK_URL = server.url
    settings.KNOWHUB_RERANK_MODEL = "fake-reranker"
    settings.KNOWHUB_RERANK_TIMEOUT = 1.0
    server.prefer = "mitochondria"
    return server


def _query(client, **extra):
    response = client.post(URL, {"query": QUERY, "top_k": 3, **extra}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.django_db
def test_default_is_offline_and_serves_fused_order(client, corpus):
    body = _query(client)
    assert body["rerank"]["provider"] == "none"
    assert body["rerank"]["served"] == "fused"
    interaction = Interaction.objects.get(pk=body["interaction_id"])
    assert interaction.filters["rerank"]["served"] == "fused"


@pytest.mark.django_db
def test_http_reranker_order_is_served_and_recorded(client, corpus, http_rerank, settings):
    settings.KNOWHUB_RERANK_PROVIDER = "none"
    fused = [r["source_id"] for r in _query(client)["results"]]
    settings.KNOWHUB_RERANK_PROVIDER = "http"
    body = _query(client)
    served = [r["source_id"] for r in body["results"]]
    assert fused[0] == "closures"
    assert served[0] == "mitochondria"  # the reranker's choice, not the fused one
    assert [r["rank"] for r in body["results"]] == [1, 2, 3]
    assert body["rerank"]["served"] == "reranked"
    request = http_rerank.requests[-1]
    assert request["model"] == "fake-reranker" and request["query"] == QUERY
    # The top N fused candidates were sent, not just top_k.
    assert len(request["documents"]) == min(settings.KNOWHUB_RERANK_TOP_N, 6)
    interaction = Interaction.objects.get(pk=body["interaction_id"])
    assert interaction.filters["rerank"]["served"] == "reranked"
    assert [r["chunk_uid"].split(":")[2] for r in interaction.retrieved] == served


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("behaviour", "message"),
    [("error", "HTTP 500"), ("slow", "within"), ("not_json", "not JSON"), ("bad_index", "not one of"),
     ("no_results", "no 'results'")],
)  # fmt: skip
def test_failures_fall_back_to_fused_order(client, corpus, http_rerank, settings, behaviour, message):
    settings.KNOWHUB_RERANK_PROVIDER = "none"
    fused = [r["chunk_uid"] for r in _query(client)["results"]]
    settings.KNOWHUB_RERANK_PROVIDER = "http"
    settings.KNOWHUB_RERANK_TIMEOUT = 0.3
    http_rerank.behaviour, http_rerank.delay = behaviour, 1.5
    body = _query(client)
    assert [r["chunk_uid"] for r in body["results"]] == fused
    assert body["rerank"]["served"] == "fused"
    assert message in body["rerank"]["error"]
    assert body["rerank"]["ms"] < 1500  # the timeout bounds the wait, not the server
    interaction = Interaction.objects.get(pk=body["interaction_id"])
    assert interaction.filters["rerank"]["served"] == "fused"
    assert message in interaction.filters["rerank"]["error"]


@pytest.mark.django_db
def test_unreachable_server_falls_back(client, corpus, settings):
    settings.KNOWHUB_RERANK_PROVIDER = "http"
    settings.KNOWHUB_RERANK_URL = "http://127.0.0.1:9/rerank"  # discard port: nothing listens
    body = _query(client)
    assert body["rerank"]["served"] == "fused" and "unreachable" in body["rerank"]["error"]


@pytest.mark.django_db
def test_ask_records_which_order_was_served(client, corpus, http_rerank):
    response = client.post("/rag/ask", {"query": QUERY}, format="json")
    assert response.status_code == 200, response.json()
    # Source rows are numbered by first citation; the retrieval order is what the interaction keeps.
    assert any(s["chunk_uid"].split(":")[2] == "mitochondria" for s in response.json()["sources"])
    interaction = Interaction.objects.filter(kind="ask").latest("pk")
    assert interaction.retrieved[0]["chunk_uid"].split(":")[2] == "mitochondria"
    assert interaction.filters["rerank"]["served"] == "reranked"


def test_misconfiguration_is_explained(settings):
    settings.KNOWHUB_RERANK_PROVIDER = "http"
    settings.KNOWHUB_RERANK_URL = ""
    with pytest.raises(RerankError, match="KNOWHUB_RERANK_URL"):
        get_reranker()
    settings.KNOWHUB_RERANK_PROVIDER = "cohere-magic"
    with pytest.raises(RerankError, match="none, http, llm"):
        get_reranker()


@dataclass
class _Hit:
    chunk_uid: str
    content: str
    title: str = ""
    rank: int = 0


class ScriptedLLM:
    """A FAKE chat model returning a scripted reply: the test is about parsing and fallback."""

    name = "scripted"
    generative = True

    def __init__(self, reply):
        self.reply = reply

    def complete(self, **kwargs):
        return Completion(text=self.reply, model="scripted")


def test_llm_listwise_order_and_malformed_reply():
    hits = [_Hit("a", "alpha"), _Hit("b", "beta"), _Hit("c", "gamma")]
    out, info = rerank_hits(query="q", hits=hits, reranker=LlmReranker(llm=ScriptedLLM('{"ranking": [3, 1]}')))
    assert [h.chunk_uid for h in out] == ["c", "a", "b"]  # unranked ones keep fused order below
    assert info.served == "reranked"
    for reply in ("I think passage 2 is best", '{"ranking": [2, 2]}', '{"ranking": [7]}'):
        out, info = rerank_hits(query="q", hits=hits, reranker=LlmReranker(llm=ScriptedLLM(reply)))
        assert [h.chunk_uid for h in out] == ["a", "b", "c"] and info.served == "fused" and info.error


def test_http_reranker_reads_tei_shape(server):
    server.behaviour = "ok"
    ranked = HttpReranker(url=server.url).rerank(query="beta", documents=["alpha", "beta"], top_n=2, timeout=2)
    assert ranked[0].index == 1


@pytest.mark.django_db
def test_evaluate_reports_rerank_beside_the_modes(local_embedder, server, settings, tmp_path):
    """evaluate --rerank: each mode gets a +rerank row scored on the reranked order (FAKE server:
    told to prefer the mitochondria document, so the ATP query's nDCG stays 1 and the others drop)."""
    import json
    from io import StringIO

    from django.core.management import call_command

    from tests.rag.factories import beir_folder
    from tests.rag.test_evaluate import CORPUS, QUERIES

    folder = beir_folder(tmp_path / "tiny-rerank", corpus=CORPUS, queries=QUERIES)
    settings.KNOWHUB_RERANK_URL = server.url
    server.prefer = "mitochondria"
    out = StringIO()
    call_command("evaluate", "--dataset", str(folder), "--modes", "hybrid", "--rerank", "http", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert set(report["modes"]) == {"hybrid", "hybrid+rerank"}
    assert report["rerank"]["fallbacks"] == {"hybrid": 0}
    assert report["modes"]["hybrid"]["ndcg@10"] > report["modes"]["hybrid+rerank"]["ndcg@10"]
    with pytest.raises(Exception, match="rerank provider is 'none'"):
        call_command("evaluate", "--dataset", str(folder), "--rerank", "--json", stdout=StringIO())
