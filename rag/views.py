"""HTML pages of the rag app: the ask page at ``/``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from rag.acl import Scope
from rag.answering.selectors import facet_values
from rag.llm import available_models, default_model_id


@login_required
def ask_page(request):
    """Question box, filters from the caller's facets, model choice; the answer streams in via JS."""
    facets = facet_values(scope=Scope.for_user(request.user))
    return render(
        request,
        "rag/ask.html",
        {
            "facets": facets.as_dict(),
            "models": [m.as_dict() for m in available_models()],
            "default_model": default_model_id(),
        },
    )
