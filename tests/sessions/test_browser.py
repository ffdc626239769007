"""The whole learner flow in headless Chromium at phone width: sign in, start, chat through the
offline guide, finish, read the summary."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from sessions.models import LearningSession
from tests.sessions.factories import good_answers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("headless browser test needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="knowhub-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=390,844",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(390, 844)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _shot(driver, tmp_path, name):
    """Screenshots go to tmp_path, or to $KNOWHUB_SCREENSHOT_DIR to look at them."""
    folder = Path(os.environ.get("KNOWHUB_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{name}.png"))


def test_learner_flow_in_a_phone_sized_browser(browser, live_server, learning_content, user, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)

    def replies_done(n):
        return lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chat .bubble.assistant:not(.pending)")) >= n

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
        if i == 6:
            _shot(browser, tmp_path, "2-session")
    last = browser.find_elements(By.CSS_SELECTOR, "#chat .bubble.assistant")[-1].text
    assert "Press Finish" in last
    assert browser.find_element(By.CSS_SELECTOR, "#phases li.current").text == "Done"
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    _shot(browser, tmp_path, "3-session-done")

    browser.find_element(By.ID, "finish").click()
    wait.until(lambda d: d.find_elements(By.ID, "score"))
    assert browser.current_url.endswith(f"/learn/session/{session.pk}/summary/")
    score = int(browser.find_element(By.ID, "score").text.rstrip("%"))
    assert score >= 80
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rules li")) == len(session.topic_pack["truths"]) + 1
    assert browser.find_elements(By.ID, "indexed")
    _shot(browser, tmp_path, "4-summary")

    browser.get(f"{live_server.url}/learn/history/")
    assert "JavaScript closures" in browser.find_element(By.TAG_NAME, "main").text
    session.refresh_from_db()
    assert session.status == "finished" and session.indexed_at is not None
