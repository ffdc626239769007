"""The source-settings admin in headless Chromium, as an operator uses it: a refused form says why,
a saved one shows in the list with its access."""

from __future__ import annotations

import pytest

from ingestion.models import SourceSetting
from rag.models import Project
from tests.sessions.test_browser import _shot, browser  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_restricts_a_notion_database(browser, live_server, django_user_model, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    Project.objects.create(slug="family", name="Family")
    browser.set_window_size(1280, 900)
    wait = WebDriverWait(browser, 30)
    browser.get(f"{live_server.url}/admin/login/?next=/admin/ingestion/sourcesetting/add/")
    browser.find_element(By.ID, "id_username").send_keys("root")
    browser.find_element(By.ID, "id_password").send_keys("pw-root-123")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait.until(lambda d: d.find_elements(By.ID, "id_key"))
    Select(browser.find_element(By.ID, "id_kind")).select_by_value("notion_database")
    browser.find_element(By.ID, "id_key").send_keys("1a2b3c4d-0000-4000-8000-00000000da7a")
    browser.find_element(By.ID, "id_name").send_keys("Journal")
    Select(browser.find_element(By.ID, "id_visibility")).select_by_value("restricted")
    mapping = browser.find_element(By.ID, "id_mapping")
    mapping.clear()
    mapping.send_keys('{"people": ["Family", "Friends"], "date": "Entry date"}')
    browser.find_element(By.NAME, "_save").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".errorlist"))
    assert "Restricted sources need a project." in browser.page_source
    _shot(browser, tmp_path, "source-setting-refused")
    Select(browser.find_element(By.ID, "id_project")).select_by_visible_text("Family")
    browser.find_element(By.NAME, "_save").click()
    wait.until(lambda d: "/admin/ingestion/sourcesetting/" in d.current_url and not d.current_url.endswith("/add/"))
    assert "Journal" in browser.page_source and "restricted" in browser.page_source
    _shot(browser, tmp_path, "source-setting-list")
    setting = SourceSetting.objects.get()
    assert setting.project.slug == "family" and setting.mapping["people"] == ["Family", "Friends"]
