import time, cProfile, pstats
import pytest
from rag.answering.services import ask_collect
from rag.llm.extractive import ExtractiveLLM
from rag.llm.context import ContextSource
pytestmark = pytest.mark.django_db

def test_smoke(corpus, user, local_embedder):
    ask_collect(user=user, query="warm up")
    pr = cProfile.Profile(); pr.enable()
    out = ask_collect(user=user, query="What did Aurora Fund return?")
    pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
    x = ExtractiveLLM()
    for q in ["what is the capital of Peru?", "who founded Zephyr?", "what is a closure?", "how do promises work"]:
        srcs = [ContextSource(n=i+1, title=t, text=txt) for i, (sid, t, d, txt) in enumerate(__import__("tests.rag.answering.conftest", fromlist=["COURSE"]).COURSE)]
        from tests.rag.answering.conftest import MEETINGS
        srcs += [ContextSource(n=10+i, title=e, text=t) for i, (a, b, e, t) in enumerate(MEETINGS)]
        ch, best = x.select(question=q, sources=srcs)
        print(q, round(best, 3), [(round(c.similarity, 3), round(c.overlap, 2), c.text[:40]) for c in ch])
