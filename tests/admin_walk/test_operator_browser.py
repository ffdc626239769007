"""A new operator, in headless Chromium and from the admin alone: finds the judgment review queue,
labels three answers with "Label and next", fits a ranking configuration from the judgments and
makes it active, then re-indexes the demo's meeting notes (type "demo") and sees its ingest run."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for
from tests.sessions.test_browser import _shot, browser  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _interactions(n: int):
    from feedback.models import Interaction
    from rag.models import Chunk

    chunks = list(Chunk.objects.filter(collection="meetings").order_by("id")[:3])
    made = []
    for i in range(n):
        made.append(Interaction.objects.create(
            query=f"what did the acme meeting decide ({i})", kind="ask", answer="They chose Postgres.",
            outcome=-1 if i == 0 else None, filters={"collections": ["meetings"]},
            retrieved=[
                {"chunk_uid": c.chunk_uid, "collection": c.collection, "rank": r + 1, "score": 0.5}
                for r, c in enumerate(chunks)
            ],
        ))  # fmt: skip
    return made


def test_a_new_operator_labels_fits_activates_and_reindexes_from_the_admin(
    browser, live_server, django_user_model, local_embedder, monkeypatch, tmp_path  # noqa: F811
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from feedback.models import Judgment, RankingConfig
    from ingestion.models import IngestRun
    from rag.demo import demo_load
    from tests.feedback.test_tuning import TITLE_HELPS, query

    demo_load(credentials_path=tmp_path / "creds.json", embedder=local_embedder)
    _interactions(4)
    django_user_model.objects.create_superuser("operator", "op@example.org", "pw-operator-123")
    # The fit's quality is tested in tests/feedback/test_tuning.py; this test is about the
    # operator's path, so the fit sees synthetic labelled queries with a clear winner.
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries", lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)]
    )
    wait = WebDriverWait(browser, 60)
    browser.set_window_size(1280, 1000)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys("operator")
    browser.find_element(By.NAME, "password").send_keys("pw-operator-123")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait.until(lambda d: d.find_elements(By.LINK_TEXT, "Judgment review queue"))
    _shot(browser, tmp_path, "operator-1-index")

    # 1. The review queue, by its name; the not-useful answer first, filters in words.
    browser.find_element(By.LINK_TEXT, "Judgment review queue").click()
    wait.until(lambda d: "what needs a label first" in d.find_element(By.TAG_NAME, "h1").text)
    first_row = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")[0]
    assert "not useful" in first_row.text and "(0)" in first_row.text
    _shot(browser, tmp_path, "operator-2-queue")
    first_row.find_element(By.CSS_SELECTOR, "th a").click()
    wait.until(lambda d: d.find_elements(By.NAME, "_label_next"))
    assert "collection meetings" in browser.page_source and "Filters:" not in browser.page_source

    # 2. Label three answers with "Label and next".
    for n in range(3):
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[name=label__0][value=positive]"))
        browser.find_element(By.CSS_SELECTOR, "input[name=label__0][value=positive]").click()
        browser.find_element(By.CSS_SELECTOR, "input[name=label__1][value=negative]").click()
        if n == 0:
            _shot(browser, tmp_path, "operator-3-labelling")
        button = browser.find_element(By.NAME, "_label_next")
        button.click()
        # The next page says "Labels saved" too: wait for this one to go before reading it.
        wait.until(EC.staleness_of(button))
        wait.until(lambda d: "Labels saved" in d.page_source)
    assert Judgment.objects.filter(preferred_over="").values("interaction").distinct().count() == 3
    assert Judgment.objects.filter(label="positive").count() == 3

    # 3. Ranking configurations: how one is made is on the page; fit, then make it active.
    browser.get(f"{live_server.url}/admin/")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Ranking config").click()
    wait.until(lambda d: "How one is made" in d.page_source)
    assert "How to go back" in browser.page_source and "None is active" in browser.page_source
    browser.find_element(By.CSS_SELECTOR, "button.fit-from-judgments").click()
    wait.until(lambda d: "Fitted" in d.page_source)
    config = RankingConfig.objects.order_by("-pk").first()
    assert config is not None
    if not config.active:
        browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{config.pk}']").click()
        Select(browser.find_element(By.NAME, "action")).select_by_visible_text(
            "Make the selected configuration the active one"
        )
        browser.find_element(By.NAME, "index").click()
    wait.until(lambda d: f"Configuration #{config.pk} is active" in d.page_source)
    assert "title match 0 →" in browser.page_source  # what the active one changed, in words
    _shot(browser, tmp_path, "operator-4-ranking")
    config.refresh_from_db()
    assert config.active

    # 4. Re-index the demo's meeting notes: nothing ticked at first, each type explained.
    browser.get(f"{live_server.url}/admin/")
    browser.find_element(By.LINK_TEXT, "Ingest runs").click()
    browser.find_element(By.CSS_SELECTOR, ".object-tools a[href$='/reindex/']").click()  # "Start a reindex"
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[name=types]"))
    boxes = browser.find_elements(By.CSS_SELECTOR, "input[name=types]")
    assert boxes and not any(b.is_selected() for b in boxes)
    assert "meeting notes" in browser.find_element(By.ID, "content").text
    _shot(browser, tmp_path, "operator-5-reindex-form")
    browser.find_element(By.CSS_SELECTOR, "input[name=types][value=demo]").click()
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value=Start]").click()
    run = wait_for(lambda: IngestRun.objects.filter(source="reindex", types=["demo"], status="done").first(), 120)
    assert run is not None and run.unchanged > 0 and run.failed == 0
    assert IngestRun.objects.filter(source="load_demo", status="done").exists()  # the demo's own indexing
    wait.until(lambda d: f"Reindex run #{run.pk} queued" in d.page_source)
    _shot(browser, tmp_path, "operator-6-runs")
