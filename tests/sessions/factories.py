"""Scripted learners for the offline guide."""

from __future__ import annotations


def good_answers(session) -> list[str]:
    """What a learner who knows the topic would type, step by step, for the offline guide."""
    from sessions.guide import OfflineGuide

    topic, state = session.topic_pack, session.state
    out, legend = [], []
    for entity in topic["entities"]:
        # The best fit still free, as the guide offers it once earlier ideas took their symbols.
        symbol = OfflineGuide.candidates(state, entity, legend)[0]
        legend.append({"entity": entity["name"], "symbol": symbol})
        out.append(f"{symbol} — it is like this: {entity['gist']}")
    out.append(topic["truths"][0])
    out += [f"False. {m['correction']}" for m in topic["misconceptions"]]
    out += [t["expected"] for t in topic["tests"]]
    return out


def poor_answers(session) -> list[str]:
    """A learner who maps with "suggest", skips the rule, believes the myths and knows nothing."""
    topic = session.topic_pack
    return (
        ["suggest"] * len(topic["entities"])
        + ["next"]
        + ["True, I think so."] * len(topic["misconceptions"])
        + ["I don't know"] * len(topic["tests"])
    )


def play(session, user, answers, *, embedder=None):
    """Send ``answers`` through ``session_chat`` (offline) and return the guide's replies."""
    from sessions.services import session_chat

    replies = []
    for answer in answers:
        replies.append(session_chat(session=session, user=user, message=answer, llm=None, embedder=embedder).event)
    return replies
