"""The whole learner flow in headless Chromium at phone width: sign in, start, chat through the
offline guide, finish, read the summary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessions.models import LearningSession
from tests.browser import chromium_installed, headless_chromium
from tests.sessions.factories import good_answers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser():
    if not chromium_installed():
        pytest.skip(
            "headless browser test needs Debian's chromium and chromium-driver "
            "(apt-get install chromium chromium-driver)"
        )
    pytest.importorskip("selenium.webdriver")
    with headless_chromium(width=390, height=844, extra_flags=("--disable-dev-shm-usage",)) as driver:
        driver.set_window_size(390, 844)
        yield driver


def _shot(driver, tmp_path, name):
    """Screenshots go to tmp_path, or to $KNOWHUB_SCREENSHOT_DIR to look at them."""
    folder = Path(os.environ.get("KNOWHUB_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{name}.png"))


def _assert_send_in_view(driver):
    from selenium.webdriver.common.by import By

    rect = driver.execute_script(
        "return arguments[0].getBoundingClientRect().toJSON()", driver.find_element(By.ID, "send")
    )
    height = driver.execute_script("return window.innerHeight")
    assert rect["top"] >= 0 and rect["bottom"] <= height, (rect, height)


def _assert_phone_layout(driver):
    """Send in view, one scroller (the page), a one-row header, nothing sideways."""
    _assert_send_in_view(driver)
    nested = driver.execute_script(
        """return [...document.querySelectorAll('main *')].filter(el => {
             const oy = getComputedStyle(el).overflowY;
             return (oy === 'auto' || oy === 'scroll') && el.tagName !== 'TEXTAREA'
                 && el.scrollHeight > el.clientHeight + 1;
           }).map(el => el.tagName + '#' + el.id + '.' + el.className);"""
    )
    assert nested == [], f"scroll boxes inside the scrolling page: {nested}"
    tops = driver.execute_script(
        "return [...document.querySelectorAll('header.site > *')]"
        ".map(el => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2))"
    )
    assert max(tops) - min(tops) <= 4, f"the header wraps: {tops}"
    assert driver.execute_script("return document.querySelector('header.site').getBoundingClientRect().height") < 60
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390


def test_learner_flow_in_a_phone_sized_browser(browser, live_server, learning_content, user, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)

    def replies_done(n):
        return lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant:not(.pending)")) >= n

    browser.get(f"{live_server.url}/learn/")
    assert "/learn/login/" in browser.current_url
    browser.find_element(By.ID, "id_username").send_keys("alice")
    browser.find_element(By.ID, "id_password").send_keys("pw-alice-123", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.realm"))
    realm = browser.find_element(By.CSS_SELECTOR, 'section.realm[data-realm="fantasy"]')
    assert "0 / 6" in realm.text
    # Nothing overflows sideways at phone width.
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    _shot(browser, tmp_path, "1-learn-home")
    realm.find_element(By.CSS_SELECTOR, "button.primary").click()

    wait.until(lambda d: d.find_elements(By.ID, "composer"))
    _assert_phone_layout(browser)
    _shot(browser, tmp_path, "1b-session-start")
    opening = browser.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant")[0]
    assert len(opening.find_elements(By.CSS_SELECTOR, ".bubble")) >= 4, "the opening comes in readable parts"
    session = LearningSession.objects.get(user=user)
    answers = good_answers(session)
    box = browser.find_element(By.ID, "message")
    for i, answer in enumerate(answers):
        box.send_keys(answer, Keys.ENTER)  # Enter sends; the reply streams in
        wait.until(replies_done(i + 2))
        wait.until(lambda d: d.find_element(By.ID, "message").is_enabled())
        if i < len(session.topic_pack["entities"]):
            rows = browser.find_elements(By.CSS_SELECTOR, "#legend tr:not(.empty-row)")
            assert len(rows) == i + 1, "the legend grows as ideas are mapped"
        _assert_send_in_view(browser)
        if i == 6:
            _shot(browser, tmp_path, "2-session")
        if i == len(answers) - len(session.topic_pack["tests"]) - 1:
            # The first test question's code is a block that keeps its lines.
            code = browser.find_elements(By.CSS_SELECTOR, "#chat pre.code")[-1]
            lines = code.text.splitlines()
            assert lines[:2] == ["function makeCounter() {", "  let n = 0;"], lines
            _shot(browser, tmp_path, "2b-test-code")
    last = browser.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant")[-1].text
    assert "Press Finish" in last
    assert browser.find_element(By.CSS_SELECTOR, "#phases li.current").text == "Done"
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    _shot(browser, tmp_path, "3-session-done")

    browser.find_element(By.ID, "finish").click()
    wait.until(lambda d: d.find_elements(By.ID, "score"))
    assert browser.current_url.endswith(f"/learn/session/{session.pk}/summary/")
    score = int(browser.find_element(By.ID, "score").text.rstrip("%"))
    assert score >= 80
    # The learner's rule restates rule 1 in their own words, which take its place.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rules li")) == len(session.topic_pack["truths"])
    assert browser.find_elements(By.ID, "indexed")
    _shot(browser, tmp_path, "4-summary")

    browser.get(f"{live_server.url}/learn/history/")
    assert "JavaScript closures" in browser.find_element(By.TAG_NAME, "main").text
    session.refresh_from_db()
    assert session.status == "finished" and session.indexed_at is not None
