# ruff: noqa: F811
"""Dialogues of the scenario suite in headless Chromium (issue 26): the chips a question's
filters leave (set in the form, or lifted because nothing under them answered), the count on the
folded filters panel and its one "clear filters", a follow-up for another period, and a source's
thumbs kept across a reload. Real PostgreSQL, the real local model, the demo corpus, the clock
pinned to the demo's day."""

from __future__ import annotations

import pytest

from rag.demo import DEMO_PROJECT, demo_documents
from rag.models import Project
from rag.services import chunk_upsert
from tests.rag.answering.test_browser import ask, browser, login, pytestmark, wait_for  # noqa: F401
from tests.rag.answering.test_scenarios import DEMO_TODAY, pinned_today  # noqa: F401


@pytest.fixture
def member(db, django_user_model, local_embedder, pinned_today):
    from django.core.cache import cache

    cache.clear()
    project = Project.objects.create(slug=DEMO_PROJECT[0], name=DEMO_PROJECT[1])
    user = django_user_model.objects.create_user(username="member", password="pw-member-123")
    project.members.add(user)
    assert not chunk_upsert(documents=demo_documents(DEMO_TODAY), embedder=local_embedder).errors
    return user


def answered(browser, n):
    from selenium.webdriver.common.by import By

    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])")) >= n)
    return browser.find_elements(By.CSS_SELECTOR, "#thread .turn")


def chip_texts(turn) -> list[str]:
    from selenium.webdriver.common.by import By

    return [c.text for c in turn.find_elements(By.CSS_SELECTOR, ".chips .chip")]


def test_form_filters_show_as_chips_with_a_count_and_one_clear(browser, live_server, member):
    from selenium.webdriver.common.by import By

    login(browser, live_server, member)
    summary = browser.find_element(By.CSS_SELECTOR, "details.filters summary")
    assert summary.text.strip() == "Filters"
    summary.click()
    box = browser.find_element(By.CSS_SELECTOR, 'input[name="collections"][value="meetings"]')
    assert box.find_element(By.XPATH, "..").text.startswith("Meetings")  # a label a person reads
    box.click()
    summary.click()  # folded again: the count still says a filter is set
    wait_for(lambda: "(1 set)" in summary.text)
    ask(browser, "what did we decide")
    turn = answered(browser, 1)[0]
    assert any("collection: Meetings (set in the filters)" in t for t in chip_texts(turn)), chip_texts(turn)
    summary.click()
    clear = browser.find_element(By.ID, "clear-filters")
    assert clear.is_displayed()
    clear.click()
    wait_for(lambda: summary.text.strip() == "Filters")
    assert not box.is_selected()


def test_lifted_filter_period_follow_up_and_thumbs_after_reload(browser, live_server, member):
    from selenium.webdriver.common.by import By

    login(browser, live_server, member)
    ask(browser, "what did we decide in 2025")
    first = answered(browser, 1)[0]
    assert any("nothing dated 2025 — searched everything" in t for t in chip_texts(first)), chip_texts(first)
    ask(browser, "what did we decide in september")
    answered(browser, 2)
    ask(browser, "and in july?")
    third = answered(browser, 3)[2]
    assert "what did we decide in july?" in third.find_element(By.CSS_SELECTOR, ".searched").text
    assert "five analysts" in third.find_element(By.CSS_SELECTOR, ".answer").text
    down = third.find_element(By.CSS_SELECTOR, '.sources li .thumbs button[data-label="negative"]')
    down.click()
    assert "on" in down.get_attribute("class")
    wait_for(lambda: _judged(member))
    browser.refresh()
    third = answered(browser, 3)[2]
    down = third.find_element(By.CSS_SELECTOR, '.sources li .thumbs button[data-label="negative"]')
    assert "on" in down.get_attribute("class")
    assert "what did we decide in july?" in third.find_element(By.CSS_SELECTOR, ".searched").text


def _judged(user) -> bool:
    from feedback.models import Judgment

    return Judgment.objects.filter(interaction__user=user, label="negative").exists()


def test_and_the_other_one_follows_the_last_question_for_the_new_name(browser, live_server, member, tmp_path):
    """A schedule question is answered with the schedule, not a count of tagged entries; "and the
    notion one" asks it again for Notion, and the page shows what was searched."""
    from selenium.webdriver.common.by import By

    login(browser, live_server, member)
    ask(browser, "how often does logseq sync run")
    first = answered(browser, 1)[0]
    answer = first.find_element(By.CSS_SELECTOR, ".answer").text
    assert "fifteen minutes" in answer and "according to the metadata" not in answer, answer
    ask(browser, "and the notion one")
    second = answered(browser, 2)[1]
    assert "how often does notion sync run?" in second.find_element(By.CSS_SELECTOR, ".searched").text
    assert "nightly" in second.find_element(By.CSS_SELECTOR, ".answer").text.lower()
    browser.save_screenshot(str(tmp_path / "other-one.png"))
