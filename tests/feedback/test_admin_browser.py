"""The ranking configuration page in headless Chromium: a staff member reads which weights tuning
changed and how far to trust each."""

from __future__ import annotations

import pytest

from tests.feedback.test_tuning import TITLE_HELPS, query
from tests.sessions.test_browser import _shot, browser  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_staff_reads_weights_and_confidence(browser, live_server, staff_user, monkeypatch, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from feedback.tuning import ranking_tune

    # synthetic labelled queries: this test is about the page, not the fit
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries",
        lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)],
    )
    report = ranking_tune(seed=0)
    staff_user.is_superuser = True  # model permissions for the admin
    staff_user.save()
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server.url}/admin/login/?next=/admin/feedback/rankingconfig/{report.config_id}/change/")
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys("pw-staff-123")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # the click returns before the login's redirect lands: wait for the page, not the form
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.ranking-features"))
    table = browser.find_element(By.CSS_SELECTOR, "table.ranking-features")
    rows = {
        r.find_elements(By.TAG_NAME, "td")[0].text: [td.text for td in r.find_elements(By.TAG_NAME, "td")]
        for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    assert set(rows) == {"vec", "txt", "title", "recency", "judgment"}
    assert rows["title"][1] == f"{report.after['w_title']:g}" and rows["title"][2] == "0"
    assert rows["title"][4].startswith("high")
    folds = browser.find_elements(By.CSS_SELECTOR, "table.ranking-folds tbody tr")
    assert len(folds) == 5 and all(r.text.split()[-1].startswith("+") for r in folds)
    _shot(browser, tmp_path, "ranking-config")
