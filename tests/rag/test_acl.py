"""A chunk a user may not see never reaches them: not in hits, candidate counts, or scores.

Property-based over random worlds of projects, memberships and chunk visibilities. The
embedder is the deterministic stand-in: this is about who sees what, not embedding quality.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from identity.models import ExternalIdentity
from rag.acl import Scope, user_hash
from rag.models import Chunk, Project
from rag.search import MODES, SearchFilters, chunk_search, known_collections
from tests.rag.factories import doc, load, load_visibility_corpus, visible_sources

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("text_backend")]

WORDS = ["closure", "promise", "index", "vector", "graph", "cell", "energy", "scope", "state", "query"]

chunk_spec = st.fixed_dictionaries(
    {
        "words": st.lists(st.sampled_from(WORDS), min_size=2, max_size=6),
        "visibility": st.sampled_from(["public", "restricted", "private"]),
        "project": st.integers(0, 2),
        "owner": st.integers(0, 2),
        # "my-files": what a person attaches on the ask page (private to them, asked about by id).
        "collection": st.sampled_from(["alpha", "beta", "my-files"]),
    }
)
world = st.fixed_dictionaries(
    {
        "chunks": st.lists(chunk_spec, min_size=1, max_size=10),
        "members": st.lists(st.sets(st.integers(0, 2), max_size=3), min_size=3, max_size=3),
        "viewer": st.integers(0, 2),
        "query": st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        "mode": st.sampled_from(MODES),
        "collections": st.sampled_from([None, ["alpha"], ["beta"]]),
        # A question restricted to some documents (attached files): ids of anyone's, visible or not.
        "source_ids": st.lists(st.integers(0, 9), max_size=3, unique=True),
    }
)


def _visible(spec, viewer, members) -> bool:
    if spec["visibility"] == "public":
        return True
    if spec["visibility"] == "restricted":
        return spec["project"] in members[viewer]
    return spec["owner"] == viewer


class Rollback(Exception):
    pass


@pytest.fixture(scope="module")
def jwt_provider(tmp_path_factory):
    """The real OpenID provider of tests/identity, whose tokens' groups give the memberships."""
    from tests.identity.provider import start_provider

    running = start_provider(tmp_path_factory.mktemp("acl-oidc-provider"))
    yield running
    running.stop()


@pytest.fixture(params=["members", "jwt"])
def memberships(request, settings):
    """How the viewer's projects come about: an admin adding members, or (``jwt``) the groups
    claim of a JWT from the provider mapped to projects, read by the API's authentication."""
    if request.param == "members":
        return None
    from tests.identity.provider import point_at

    provider = request.getfixturevalue("jwt_provider")
    point_at(settings, provider)
    return provider


def _scope_from_jwt(provider, viewer_index: int, projects, member_of) -> Scope:
    from rest_framework.test import APIRequestFactory

    from identity.authentication import JWTAuthentication
    from identity.models import GroupProjectMapping

    for p in projects:
        GroupProjectMapping.objects.get_or_create(group=f"group-{p.slug}", project=p)
    login = f"u{viewer_index}"
    provider.set_user(login, groups=[f"group-p{p}" for p in sorted(member_of)] + ["unmapped"], sub=f"sub-{login}")
    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {provider.access_token(login)}")
    user, _claims = JWTAuthentication().authenticate(request)
    assert user.username == login
    scope = Scope.for_user(user)
    assert set(scope.project_ids) == {projects[p].id for p in member_of}  # exactly its groups' projects
    return scope


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(w=world)
def test_hidden_chunks_never_change_what_a_user_gets(hashing_embedder, text_backend, memberships, w):
    try:
        with transaction.atomic():
            User = get_user_model()
            users = [User.objects.create_user(username=f"u{i}") for i in range(3)]
            projects = [Project.objects.create(slug=f"p{i}", name=f"P{i}") for i in range(3)]
            for u, member_of in zip(users, w["members"], strict=True):
                if memberships is not None and u is users[w["viewer"]]:
                    continue  # the viewer's projects come from their token's groups
                for p in member_of:
                    projects[p].members.add(u)
            if memberships is not None:
                ExternalIdentity.objects.bulk_create(
                    ExternalIdentity(user=u, issuer=memberships.issuer, subject=f"sub-{u.username}") for u in users
                )
            docs = []
            for i, spec in enumerate(w["chunks"]):
                kw = {"visibility": spec["visibility"], "collection": spec["collection"]}
                if spec["visibility"] == "restricted":
                    kw["project"] = f"p{spec['project']}"
                if spec["visibility"] == "private":
                    kw["owner_hash"] = user_hash(users[spec["owner"]].pk)
                docs.append(doc(f"d{i}", "", " ".join(spec["words"]), **kw))
            load(docs, hashing_embedder)
            viewer = users[w["viewer"]]
            if memberships is None:
                scope = Scope.for_user(viewer)
            else:
                scope = _scope_from_jwt(memberships, w["viewer"], projects, w["members"][w["viewer"]])
            restrict = [f"d{i}" for i in w["source_ids"]]
            filters = SearchFilters(collections=w["collections"], source_ids=restrict)

            def run():
                r = chunk_search(
                    query=w["query"], scope=scope, filters=filters, top_k=50, mode=w["mode"], embedder=hashing_embedder
                )
                return r, [(h.chunk_uid, h.score, h.vec_score, h.txt_score) for h in r.hits]

            result, seen = run()
            allowed = {
                f"{spec['collection']}:page:d{i}:u0:0"
                for i, spec in enumerate(w["chunks"])
                if _visible(spec, w["viewer"], w["members"])
            }
            assert {uid for uid, *_ in seen} <= allowed
            if restrict:  # naming another person's file never brings it into the results
                assert {uid.split(":")[2] for uid, *_ in seen} <= set(restrict)
            visible_collections = known_collections(scope)
            assert set(visible_collections) == {uid.split(":")[0] for uid in allowed}

            # Remove everything the viewer may not see: hits and counts must not move, and with the
            # SQL backend (IDF over the caller's partitions) not the scores either. pg_textsearch's
            # statistics are the whole index's (README, security notes): there only what is returned.
            with transaction.atomic():
                Chunk.objects.exclude(chunk_uid__in=allowed).delete()
                alone, seen_alone = run()
                if text_backend == "sql":
                    assert seen_alone == seen
                else:
                    assert {uid for uid, *_ in seen_alone} == {uid for uid, *_ in seen}
                    assert set(known_collections(scope)) == set(visible_collections)
                assert alone.candidates == result.candidates
                transaction.set_rollback(True)
            raise Rollback
    except Rollback:
        pass


def test_member_sees_restricted_chunk_and_non_member_does_not(user, other_user, hashing_embedder):
    load_visibility_corpus(user, other_user, hashing_embedder)
    for mode in MODES:
        assert visible_sources(user, hashing_embedder, mode) == {"open", "closed"}
        assert visible_sources(other_user, hashing_embedder, mode) == {"open", "mine"}
    anonymous = chunk_search(query="secret", scope=Scope.for_user(None), mode="fulltext", embedder=hashing_embedder)
    assert anonymous.hits == []
