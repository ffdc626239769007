"""A person's own file on the ask page, in a real browser (headless Chromium): a non-staff user
drops a PDF on the page, asks about it, gets an answer citing it with its original one click
away, and another user finds nothing of it. Real extraction child, database, local model and
extractive answerer."""

from __future__ import annotations

import base64

import pytest

from tests.browser import chromium_installed, headless_chromium
from tests.ingestion.factories import pdf_bytes
from tests.rag.answering.test_browser import ask, login, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not chromium_installed(),
        reason="headless browser test needs Debian's chromium and chromium-driver "
        "(apt-get install -y chromium chromium-driver)",
    ),
]

GARDEN = pdf_bytes([("Allotment rules", "The allotment gate code is 4417.\nWatering is allowed before eight.")],
                   title="Allotment rules")  # fmt: skip

DROP = """
const [name, b64] = arguments;
const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const dt = new DataTransfer();
dt.items.add(new File([bytes], name, { type: "application/pdf" }));
document.body.dispatchEvent(new DragEvent("dragenter", { dataTransfer: dt, bubbles: true }));
window.__overlayShown = !document.getElementById("drop-overlay").hidden;
const drop = new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true });
document.getElementById("thread").dispatchEvent(drop);
"""


@pytest.fixture
def browser():
    with headless_chromium(width=1200, height=1000) as driver:
        driver.set_page_load_timeout(60)
        yield driver


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"


def test_a_dropped_file_is_asked_about_cited_and_private(browser, live_server, local_embedder, user, other_user):
    from selenium.webdriver.common.by import By

    assert not user.is_staff
    login(browser, live_server, user)
    browser.execute_script(DROP, "garden.pdf", base64.b64encode(GARDEN).decode())
    assert browser.execute_script("return window.__overlayShown") is True
    chip = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#attached-chips .file-chip"))
    assert "garden.pdf" in chip.text
    assert browser.find_element(By.ID, "your-files-count").text == "1"

    ask(browser, "What is the allotment gate code?")
    wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])"))
    assert "4417" in browser.find_element(By.CSS_SELECTOR, "#thread .turn .answer").text
    cited = browser.find_elements(By.CSS_SELECTOR, "#thread .turn .sources li.cited")
    assert cited and "Allotment rules" in cited[0].text and "p. 1" in cited[0].text
    assert cited[0].find_element(By.CSS_SELECTOR, "a.src-link").get_attribute("href").startswith(
        f"{live_server.url}/documents/"
    )
    original = cited[0].find_element(By.CSS_SELECTOR, "a.orig-link").get_attribute("href")
    assert original.startswith(f"{live_server.url}/ingest/files/")

    # The chip stays until removed; removing it lifts the restriction.
    chip = browser.find_element(By.CSS_SELECTOR, "#attached-chips .file-chip")
    chip.find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: not browser.find_elements(By.CSS_SELECTOR, "#attached-chips .file-chip"))

    # Another person, same browser tab: nothing of it, not even the chip remembered by the tab.
    browser.delete_all_cookies()
    login(browser, live_server, other_user)
    wait_for(lambda: browser.find_element(By.ID, "your-files-count").text == "0")
    assert not browser.find_elements(By.CSS_SELECTOR, "#attached-chips .file-chip")
    ask(browser, "What is the allotment gate code?")
    wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#thread .turn .meta:not([hidden])") or
             browser.find_element(By.CSS_SELECTOR, "#thread .turn .error-box:not([hidden])"))  # fmt: skip
    assert "4417" not in browser.find_element(By.ID, "thread").text
    assert "Allotment" not in browser.find_element(By.ID, "thread").text
    browser.get(original)  # the download link, opened by someone who may not see the file
    assert "not_found" in browser.page_source and "4417" not in browser.page_source
