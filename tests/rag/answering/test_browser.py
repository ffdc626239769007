"""The ask page in a real browser (headless Chromium): ask, watch the stream, stop, see sources."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest

from feedback.models import Interaction
from tests.browser import chromium_installed, headless_chromium
from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not chromium_installed(),
        reason="headless browser test needs Debian's chromium and chromium-driver "
        "(apt-get install -y chromium chromium-driver)",
    ),
]

SCREENSHOT = Path(tempfile.gettempdir()) / "knowhub-ask-page.png"


@pytest.fixture
def browser():
    with headless_chromium(width=1200, height=1000) as driver:
        driver.set_page_load_timeout(60)
        yield driver


def login(browser, live_server, user):
    """Log in with a session cookie: the admin login form only admits staff accounts."""
    from django.conf import settings
    from django.test import Client
    from selenium.webdriver.common.by import By

    browser.get(f"{live_server.url}/")
    assert "/login/" in browser.current_url  # the page requires a login
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    browser.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "path": "/"})
    browser.get(f"{live_server.url}/")
    wait_for(lambda: browser.find_elements(By.ID, "question"))


def wait_for(condition, timeout=60.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # an element between two renders
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting for the page")


def ask(browser, question):
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    browser.find_element(By.ID, "ask-btn").click()


def test_ask_streams_an_answer_with_sources_and_feedback_buttons(browser, live_server, corpus, user):
    from selenium.webdriver.common.by import By

    login(browser, live_server, user)
    ask(browser, "What is a closure in JavaScript?")
    turn = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])"))
    answer = browser.find_element(By.CSS_SELECTOR, "#thread .turn .answer")
    assert "closure" in answer.text.lower()
    assert answer.find_elements(By.CSS_SELECTOR, "sup a.cite")  # [n] rendered as links to sources
    assert "<" not in answer.text  # markdown rendered, nothing raw
    sources = browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li")
    assert sources and any("Closures" in li.text for li in sources)
    # Every source opens its document view; one with an original link offers it beside.
    assert all(
        "/documents/" in a.get_attribute("href")
        for a in browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li a.src-link")
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li.cited a.orig-link[href^='https://course.example/']")
    numbers = [int(li.find_element(By.CSS_SELECTOR, ".n").text.strip("[]")) for li in sources]
    assert numbers == sorted(numbers)  # listed in the order the answer numbers them
    # Plain words for people: no internal strategy names, "no AI model" said once, no zero cost.
    assert turn.text.count("Quoted from your sources (no AI model)") == 1
    assert "NEW_QUERY" not in turn.text and "extractive" not in turn.text.lower() and "$0.0" not in turn.text
    assert browser.find_element(By.ID, "question").get_attribute("value") == ""  # cleared after sending
    browser.save_screenshot(str(SCREENSHOT))
    # Thumbs up is wired to the feedback endpoint (404 until it exists is fine): no page error.
    turn.find_element(By.CSS_SELECTOR, ".thumbs button[data-outcome='1']").click()
    assert "on" in turn.find_element(By.CSS_SELECTOR, ".thumbs button[data-outcome='1']").get_attribute("class")
    assert Interaction.objects.filter(user=user, strategy="NEW_QUERY").count() == 1

    # A follow-up in the same conversation reuses the sources.
    ask(browser, "tell me more")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])")) == 2)
    questions = [q.text for q in browser.find_elements(By.CSS_SELECTOR, "#thread .turn .question")]
    assert questions == ["What is a closure in JavaScript?", "tell me more"]  # oldest first
    assert Interaction.objects.filter(user=user, strategy="REUSE").count() == 1
    assert "REUSE" not in browser.find_element(By.ID, "thread").text


def test_stop_during_a_slow_stream_stops_generation(browser, live_server, corpus, settings, user):
    from selenium.webdriver.common.by import By

    reply = " ".join(f"Closures keep state {i} [1]." for i in range(300))
    with FakeOpenAI(reply=reply, delay=0.05, analysis={"people": [], "tags": [], "counting": False}) as fake:
        use_fake(settings, fake)
        login(browser, live_server, user)
        ask(browser, "What is a closure?")
        answer = browser.find_element(By.CSS_SELECTOR, "#thread .turn .answer")
        wait_for(lambda: len(answer.text) > 80)  # text is streaming in
        first = answer.text
        wait_for(lambda: len(answer.text) > len(first))  # …and growing
        assert browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li")  # sources arrived first
        browser.find_element(By.ID, "stop-btn").click()
        wait_for(lambda: "Stopped" in browser.find_element(By.CSS_SELECTOR, "#thread .turn .status").text)
        stopped_at = answer.text
        assert fake.disconnected.wait(20), "the model server kept streaming after Stop"
        assert fake.finished_streams == 0 and fake.chunks_sent < 300
        time.sleep(0.5)
        assert answer.text == stopped_at
        assert not browser.find_element(By.ID, "ask-btn").get_attribute("disabled")
    row = wait_for(lambda: Interaction.objects.filter(filters__stopped=True).first(), timeout=20)
    assert row.answer and row.model == "fake-model"
    logs = [
        e
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "/rag/feedback" not in e["message"] and "favicon" not in e["message"]
    ]
    assert not logs, json.dumps(logs)
