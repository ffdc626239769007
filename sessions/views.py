"""Learner pages under ``/learn/``: realms, a session's chat, its summary, the history.

Server-rendered; the session page's script streams replies from ``/sessions/<id>/chat/stream``
and falls back to the plain form post (``session_chat_page``) without JavaScript.
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from sessions import services
from sessions.guide import PHASES, progress
from sessions.selectors import (
    SessionNotFound,
    realm_progress_list,
    session_get_for_user,
    session_history,
)

logger = logging.getLogger(__name__)

LOGIN_URL = "/learn/login/"
PHASE_LABELS = {"entities": "Map", "rules": "Rules", "misconceptions": "Myths", "tests": "Test", "done": "Done"}


class LearnLoginView(LoginView):
    """A sign-in page for learners (the admin's form only admits staff)."""

    template_name = "sessions/login.html"
    redirect_authenticated_user = True

    def get_default_redirect_url(self):
        return "/learn/"


def _session_or_404(request, pk: int):
    try:
        return session_get_for_user(session_id=pk, user=request.user)
    except SessionNotFound:
        raise Http404("No such session.") from None


@login_required(login_url=LOGIN_URL)
def learn_home(request):
    return render(request, "sessions/home.html", {"realms": realm_progress_list(user=request.user)})


@login_required(login_url=LOGIN_URL)
@require_POST
def session_start_page(request, realm: str):
    topic = request.POST.get("topic") or None
    try:
        result = services.session_start(user=request.user, realm=realm, topic=topic)
    except services.SessionOpen as exc:
        messages.info(request, exc.detail)
        return redirect("learn:session", pk=exc.extra["session_id"])
    except services.SessionError as exc:
        messages.error(request, exc.detail)
        return redirect("learn:home")
    return redirect("learn:session", pk=result.session.pk)


@login_required(login_url=LOGIN_URL)
def session_page(request, pk: int):
    session = _session_or_404(request, pk)
    if session.is_finished:
        return redirect("learn:summary", pk=session.pk)
    prog = progress(session.state or {}, session.topic_pack or {})
    return render(
        request,
        "sessions/session.html",
        {
            "session": session,
            "events": session.events.exclude(role="system"),
            "progress": prog,
            "phases": [(p, PHASE_LABELS[p], i) for i, p in enumerate(PHASES)],
            "symbols": (session.realm_snapshot or {}).get("symbols", []),
            "hints": (session.realm_snapshot or {}).get("hints", []),
            "readonly": session.user_id != request.user.pk,
        },
    )


@login_required(login_url=LOGIN_URL)
@require_POST
def session_chat_page(request, pk: int):
    """The no-JavaScript path: post the message, then show the page again."""
    session = _session_or_404(request, pk)
    try:
        services.session_chat(session=session, user=request.user, message=request.POST.get("message", ""))
    except services.SessionError as exc:
        messages.error(request, exc.detail)
    return redirect("learn:session", pk=session.pk)


@login_required(login_url=LOGIN_URL)
@require_POST
def session_finish_page(request, pk: int):
    session = _session_or_404(request, pk)
    try:
        services.session_finish(session=session, user=request.user)
    except services.SessionError as exc:
        messages.error(request, exc.detail)
        return redirect("learn:session", pk=session.pk)
    return redirect("learn:summary", pk=session.pk)


@login_required(login_url=LOGIN_URL)
def session_summary_page(request, pk: int):
    session = _session_or_404(request, pk)
    if not session.is_finished:
        return redirect("learn:session", pk=session.pk)
    state = session.state or {}
    contests = {c.test_index: c for c in session.grade_contests.all()}
    tests = [dict(row, index=i, contest=contests.get(i)) for i, row in enumerate(state.get("test_results", []))]
    return render(
        request,
        "sessions/summary.html",
        {
            "session": session,
            "score_pct": round((session.score or 0) * 100),
            "tests": tests,
            "myths": state.get("misconception_results", []),
            "readonly": session.user_id != request.user.pk,
        },
    )


@login_required(login_url=LOGIN_URL)
@require_POST
def session_contest_page(request, pk: int):
    """Contest the grade of one test answer; it goes to the admin's review queue."""
    session = _session_or_404(request, pk)
    try:
        index = int(request.POST.get("test", ""))
    except ValueError:
        index = -1
    try:
        services.session_grade_contest(
            session=session, user=request.user, test_index=index, reason=request.POST.get("reason", "")
        )
    except services.SessionError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            f"Thanks: your objection to question {index + 1} is with a reviewer. "
            "If they accept your answer, your score is updated.",
        )
    return redirect("learn:summary", pk=session.pk)


@login_required(login_url=LOGIN_URL)
def session_history_page(request):
    return render(request, "sessions/history.html", {"sessions": session_history(user=request.user)})
