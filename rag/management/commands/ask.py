"""``manage.py ask "question"``: the answer streamed to the terminal, sources and costs after it."""

from __future__ import annotations

import datetime as dt
import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from rag.acl import Scope
from rag.answering.services import AskError, ask, collect
from rag.search import MODES, SearchFilters


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(f"Invalid date {value!r}: use YYYY-MM-DD.") from exc


class Command(BaseCommand):
    help = "Ask a question over the index; the answer streams as it is written."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object (the /rag/ask response) instead."
        )
        parser.add_argument("--model", default=None, help="A model id of the model table (default: configured).")
        parser.add_argument("--collection", action="append", dest="collections", default=None)
        parser.add_argument("--from", dest="date_from", default=None, help="YYYY-MM-DD")
        parser.add_argument("--to", dest="date_to", default=None, help="YYYY-MM-DD")
        parser.add_argument("--domain", default=None)
        parser.add_argument("--entity", default=None)
        parser.add_argument("--person", action="append", dest="people", default=None)
        parser.add_argument("--tag", action="append", dest="tags", default=None)
        parser.add_argument("--top-k", type=int, default=None)
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument(
            "--user",
            default=None,
            help="Answer as this username: only what that user may see (required unless --all-projects).",
        )
        parser.add_argument(
            "--all-projects",
            action="store_true",
            help="Answer as an operator who sees every project, restricted and private documents included.",
        )
        parser.add_argument(
            "--conversation", default=None, help="Continue a conversation id printed by an earlier ask."
        )

    def handle(self, *args, **opts):
        user = None
        scope = Scope.everything()
        if opts["user"] and opts["all_projects"]:
            raise CommandError("Give either --user USERNAME or --all-projects, not both.")
        if not opts["user"] and not opts["all_projects"]:
            # An answer quoting restricted and private documents must be asked for in so many words.
            raise CommandError(
                "Say whose view to answer from: --user USERNAME (what that user may see), or --all-projects "
                "(every project, restricted and private documents included)."
            )
        if opts["user"]:
            try:
                user = get_user_model().objects.get(username=opts["user"])
            except get_user_model().DoesNotExist as exc:
                raise CommandError(f"No user {opts['user']!r}.") from exc
            scope = Scope.for_user(user)
        filters = SearchFilters(
            collections=opts["collections"],
            domain=opts["domain"],
            entity=opts["entity"],
            people=opts["people"] or [],
            tags=opts["tags"] or [],
            date_from=_date(opts["date_from"]) if opts["date_from"] else None,
            date_to=_date(opts["date_to"]) if opts["date_to"] else None,
        )
        try:
            events = ask(
                user=user,
                scope=scope,
                query=opts["question"],
                filters=filters,
                model=opts["model"],
                conversation_id=opts["conversation"],
                top_k=opts["top_k"],
                mode=opts["mode"],
            )
        except AskError as exc:
            raise CommandError(exc.detail) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(collect(events), indent=2, default=str))
            return
        self._stream(events)

    def _stream(self, events) -> None:
        out, err = self.stdout, self.stderr
        sources: list[dict] = []
        cited: set[int] = set()
        try:
            for event in events:
                data = event.data
                if event.type == "status":
                    err.write(
                        self.style.HTTP_INFO(
                            f"… {data['stage']} ({data.get('strategy_label') or data.get('model', '')})"
                        )
                    )
                elif event.type == "sources":
                    sources = data["sources"]
                    self._search_notes(data)
                elif event.type == "delta":
                    out.write(data["text"], ending="")
                    out.flush()
                elif event.type == "citations":
                    cited = {c["n"] for c in data["citations"]}
                    sources = data.get("sources", sources)  # final numbering: order of first citation
                elif event.type == "error":
                    err.write(self.style.ERROR(f"\n{data['error']}: {data.get('detail', '')}"))
                elif event.type == "done":
                    out.write("\n")
                    self._sources(sources, cited)
                    self._footer(data)
        except KeyboardInterrupt:
            events.close()
            err.write(self.style.WARNING("\nstopped"))

    def _search_notes(self, data: dict) -> None:
        """What the search did besides the question as typed: rewritten query, filters, fallback."""
        err = self.stderr
        if data.get("searched_query") and data["searched_query"] != data.get("query"):
            err.write(self.style.HTTP_INFO(f"searched: {data['searched_query']}"))
        for chip in data.get("analysis_filters") or []:
            err.write(self.style.HTTP_INFO(f"{chip['label']} · {chip['effect']}"))
        if data.get("fallback"):
            err.write(self.style.WARNING(f"no chunk matched the {data['fallback']} filter: searched without it"))

    def _sources(self, sources: list[dict], cited: set[int]) -> None:
        """The source list, cited ones starred."""
        if not sources:
            return
        out = self.stdout
        out.write(self.style.MIGRATE_HEADING("\nSources"))
        for s in sources:
            mark = "*" if s["n"] in cited else " "
            line = f"{mark}[{s['n']}] {s['title'] or s['chunk_uid']}"
            if s.get("date"):
                line += f" ({s['date']})"
            if s.get("url"):
                line += f" {s['url']}"
            out.write(line)

    def _footer(self, data: dict) -> None:
        """Model, strategy, tokens, cost, latency and the ids to continue or judge the answer."""
        label = " · quotes from the sources (no LLM)" if data["extractive"] else ""
        self.stdout.write(
            self.style.HTTP_NOT_MODIFIED(
                f"\n{data['model']}{label} · {data['strategy_label']} · {data['tokens']} tokens · "
                f"{data['cost_label']} · {data['latency_ms'] / 1000:.2f} s · "
                f"conversation {data['conversation_id']} · interaction {data['interaction_id']}"
            )
        )
