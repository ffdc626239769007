"""Every page works in headless Chromium under the Content-Security-Policy, with no violation.

A listener installed before any page script (Chrome DevTools' addScriptToEvaluateOnNewDocument,
which the page's policy does not govern) records each ``securitypolicyviolation`` event and each
uncaught script error; every page is then used, not just loaded: a question is asked and
answered, a source opened, a learning session started and answered, an admin list filtered, the
API docs rendered from the schema. A control injects an inline script and finds it blocked.
"""

from __future__ import annotations

import pytest

from tests.sessions.conftest import learning_content  # noqa: F401 (fixture)
from tests.sessions.test_browser import _shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORDER = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${where}`);
});
window.addEventListener('error', (e) => { window.__violations.push(`script error: ${e.message}`); });
"""


@pytest.fixture
def browser():
    from tests.browser import chromium_installed, headless_chromium

    if not chromium_installed():
        pytest.skip("the CSP browser test needs Debian's chromium and chromium-driver")
    pytest.importorskip("selenium.webdriver")
    with headless_chromium(width=1280, height=900, extra_flags=("--disable-dev-shm-usage",)) as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        yield driver


def violations(driver) -> list[str]:
    return driver.execute_script("return window.__violations || []")


def test_pages_work_under_the_policy_without_violations(
    browser, live_server, learning_content, staff_user, local_embedder, tmp_path  # noqa: F811
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.rag.factories import load, topic_corpus

    load(topic_corpus(), local_embedder)
    staff_user.is_superuser = True
    staff_user.save()
    wait = WebDriverWait(browser, 90)
    seen: dict[str, list[str]] = {}

    def check(name: str):
        seen[name] = violations(browser)
        _shot(browser, tmp_path, name)

    # the header is there (django-csp answers every page)
    browser.get(f"{live_server.url}/login/")
    check("login")
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys("pw-staff-123", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.ID, "ask-form"))

    # ask: the question streams an answer with sources (ask.js, markdown.js, fetch to /rag/ask/stream)
    browser.find_element(By.ID, "question").send_keys("How do closures capture variables?", Keys.ENTER)
    source_links = "#thread .turn .sources:not([hidden]) a[href*='/documents/']"
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, source_links))
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#thread .turn .answer").text.strip())
    check("ask")

    # a source's document page (document.js renders its markdown)
    browser.find_element(By.CSS_SELECTOR, "#thread .turn .sources a[href*='/documents/']").click()
    wait.until(lambda d: d.find_elements(By.ID, "document"))
    assert browser.find_element(By.CSS_SELECTOR, "#document .doc-title").text
    check("document")

    # a learning session: start, answer once (session.js streams the reply)
    browser.get(f"{live_server.url}/learn/")
    browser.find_element(By.CSS_SELECTOR, 'section.realm[data-realm="fantasy"] button.primary').click()
    wait.until(lambda d: d.find_elements(By.ID, "composer"))
    replies = len(browser.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant:not(.pending)"))
    browser.find_element(By.ID, "message").send_keys("a function", Keys.ENTER)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant:not(.pending)")) > replies)
    check("session")

    # admin: the index, a list with its filter sidebar and action bar (admin's own scripts)
    browser.get(f"{live_server.url}/admin/")
    wait.until(lambda d: d.find_elements(By.ID, "content-main"))
    check("admin")
    browser.get(f"{live_server.url}/admin/auth/user/")
    wait.until(lambda d: d.find_elements(By.ID, "changelist-form"))
    browser.find_element(By.ID, "action-toggle").click()  # actions.js checks every row
    assert all(box.is_selected() for box in browser.find_elements(By.CSS_SELECTOR, "input.action-select"))
    check("admin-changelist")

    # the API docs: Swagger UI built from /api/schema/ by its separate start-up script
    browser.get(f"{live_server.url}/api/docs/")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) > 10)
    check("api-docs")

    assert {name: found for name, found in seen.items() if found} == {}

    # control: an inline script is what the policy refuses, and the recorder sees it
    browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.__inlineRan = true';"
        "document.head.appendChild(s);"
    )
    wait.until(lambda d: violations(d))
    assert browser.execute_script("return window.__inlineRan === undefined")
    assert "script-src" in violations(browser)[0]


@pytest.mark.django_db
def test_every_page_and_api_answer_carries_both_policies(client, user):
    for path in ("/login/", "/learn/login/", "/api/docs/", "/health", "/no/such/page"):
        response = client.get(path)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline' " not in policy.split("script-src")[1].split(";")[0]
        assert "frame-ancestors 'none'" in policy
        assert "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]
