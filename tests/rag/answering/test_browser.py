"""The ask page in a real browser (headless Chromium): ask, watch the stream, stop, see sources."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from feedback.models import Interaction
from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="headless browser test needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
    ),
]

SCREENSHOT = Path(tempfile.gettempdir()) / "knowhub-ask-page.png"


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="knowhub-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--window-size=1200,1000",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


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
    assert browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li.cited a.src-link[href^='https://course.example/']")
    dates = [li.find_element(By.CSS_SELECTOR, ".date").text for li in sources]
    dated = [d for d in dates if d]
    assert dated == sorted(dated) and dates[: len(dated)] == dated  # by date, undated last
    assert "extractive" in turn.text and "NEW_QUERY" in turn.text
    browser.save_screenshot(str(SCREENSHOT))
    # Thumbs up is wired to the feedback endpoint (404 until it exists is fine): no page error.
    turn.find_element(By.CSS_SELECTOR, ".thumbs button[data-outcome='1']").click()
    assert "on" in turn.find_element(By.CSS_SELECTOR, ".thumbs button[data-outcome='1']").get_attribute("class")
    assert Interaction.objects.filter(user=user, strategy="NEW_QUERY").count() == 1

    # A follow-up in the same conversation reuses the sources.
    ask(browser, "tell me more")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])")) == 2)
    assert "REUSE" in browser.find_element(By.CSS_SELECTOR, "#thread .turn").text


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
    logs = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/rag/feedback" not in e["message"] and "favicon" not in e["message"]]
    assert not logs, json.dumps(logs)
