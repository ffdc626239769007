"""A full offline session in each realm, typed the way a learner types, in headless Chromium: the
suggested symbols fit each idea's role, "why it fits" is one sentence, the learner's rule (said
with a symbol) is matched to the rule it restates, terse right answers pass, and the summary keeps
the learner's own words. Screenshots go to $KNOWHUB_SCREENSHOT_DIR when set."""

from __future__ import annotations

import pytest

from sessions.models import LearningSession
from tests.sessions.test_browser import _shot, browser  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What a learner types after the five "suggest"s: a rule in their words with their symbol, the
# four myths judged tersely, and the four tests answered tersely.
CARRIER = {"fantasy": "Lantern", "kitchen": "Lunchbox"}
PLACE = {"fantasy": {"Castle", "Vault"}, "kitchen": {"Prep station", "Walk-in fridge"}}


def _typed(realm: str) -> list[str]:
    return [
        *["suggest"] * 5,
        f"the {CARRIER[realm].lower()} sees the live value, not a copy",
        "false, it keeps a live reference",
        "false - every function closes over its scope",
        "false, its where it was written that counts",
        "false, var is shared by all of them",
        "1",
        "3 3 3, use let",
        "only the inner functions can see them",
        "once nothing references the closure",
    ]


@pytest.mark.parametrize("realm_slug", ["fantasy", "kitchen"])
def test_a_full_session_in_each_realm_reads_sensibly(
    browser, live_server, learning_content, user, tmp_path, realm_slug  # noqa: F811
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 90)
    browser.set_window_size(1100, 1400)

    def replies_done(n):
        return lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant:not(.pending)")) >= n

    browser.get(f"{live_server.url}/learn/")
    browser.find_element(By.ID, "id_username").send_keys("alice")
    browser.find_element(By.ID, "id_password").send_keys("pw-alice-123", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.realm"))
    browser.find_element(By.CSS_SELECTOR, f'section.realm[data-realm="{realm_slug}"] button.primary').click()
    wait.until(lambda d: d.find_elements(By.ID, "composer"))
    session = LearningSession.objects.get(user=user)
    assert session.topic_id == "js-closures"
    replies = []
    for i, answer in enumerate(_typed(realm_slug)):
        browser.find_element(By.ID, "message").send_keys(answer, Keys.ENTER)
        wait.until(replies_done(i + 2))
        wait.until(lambda d: d.find_element(By.ID, "message").is_enabled())
        replies.append(browser.find_elements(By.CSS_SELECTOR, "#chat .turn.assistant")[-1].text)
        if i == 3:
            _shot(browser, tmp_path, f"session-{realm_slug}-1-mapping")
        if i == 5:
            _shot(browser, tmp_path, f"session-{realm_slug}-2-rule")
    _shot(browser, tmp_path, f"session-{realm_slug}-3-tests")
    session.refresh_from_db()
    legend = {row["entity"]: row["symbol"] for row in session.legend}
    assert legend["Closure"] == CARRIER[realm_slug] and legend["Lexical environment"] in PLACE[realm_slug]
    for reply in replies[:5]:
        why = reply[reply.index("Why it fits") :].splitlines()[0]
        # The shared role in one sentence; a symbol sharing none (the best ones already taken) is
        # said as what the idea is like.
        assert (" both " in why or " is like the " in why) and why.count(".") == 1, why
    assert replies[5].startswith("That restates rule 2"), replies[5]
    assert all(r.startswith("✓") for r in replies[-4:]), replies[-4:]

    browser.find_element(By.ID, "finish").click()
    wait.until(lambda d: d.find_elements(By.ID, "score"))
    rules = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#rules li")]
    assert _typed(realm_slug)[5] in rules and not any("In my words" in r for r in rules)
    _shot(browser, tmp_path, f"session-{realm_slug}-4-summary")
