"""The whole single sign-on in headless Chromium against the real OpenID provider: sign in on the
provider's page, ask, see exactly the chunks of the projects the groups map to; taken out of the
group at the provider, the next sign-in no longer shows them. Also the learning pages' sign-in,
the admin's, and the API-token page."""

from __future__ import annotations

import pytest

from identity.models import GroupProjectMapping
from rag.models import Project
from tests.browser import chromium_installed, headless_chromium
from tests.identity.provider import point_at, start_provider
from tests.rag.factories import doc, load

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def browser_provider(live_server, tmp_path_factory):
    running = start_provider(
        tmp_path_factory.mktemp("oidc-provider-browser"),
        redirect_uris=[f"{live_server.url}/oidc/callback/"], post_logout_uris=[f"{live_server.url}/login/"],
    )  # fmt: skip
    yield running
    running.stop()


@pytest.fixture
def sso(settings, browser_provider):
    point_at(settings, browser_provider)
    return browser_provider


@pytest.fixture
def browser():
    if not chromium_installed():
        pytest.skip("headless browser test needs Debian's chromium and chromium-driver")
    pytest.importorskip("selenium.webdriver")
    with headless_chromium(width=1200, height=900, extra_flags=("--disable-dev-shm-usage",)) as driver:
        yield driver


@pytest.fixture
def corpus(local_embedder):
    for slug in ("eng", "sales"):
        Project.objects.create(slug=slug, name=slug.title())
    load(
        [
            doc("open", "Vector search", "Vector search finds passages by meaning with embeddings."),
            doc("eng-doc", "Vector search internals", "Vector search uses an HNSW index over embeddings.",
                visibility="restricted", project="eng"),
            doc("sales-doc", "Vector search pitch", "Vector search finds answers by meaning for customers.",
                visibility="restricted", project="sales"),
        ],
        local_embedder,
    )  # fmt: skip
    GroupProjectMapping.objects.create(group="engineers", project=Project.objects.get(slug="eng"))
    GroupProjectMapping.objects.create(group="sellers", project=Project.objects.get(slug="sales"))


def _provider_login(driver, wait, login: str, password: str = "pw"):
    from selenium.webdriver.common.by import By

    wait.until(lambda d: d.find_elements(By.ID, "login"))
    driver.find_element(By.ID, "login").send_keys(login)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "submit").click()


def _ask_sources(driver, wait, live_server) -> set[str]:
    """Ask on the ask page; the source ids of the chunks the answer lists."""
    from selenium.webdriver.common.by import By

    driver.get(f"{live_server.url}/")
    wait.until(lambda d: d.find_elements(By.ID, "question"))
    driver.find_element(By.ID, "question").send_keys("How does vector search find passages?")
    driver.find_element(By.ID, "ask-btn").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn .meta:not([hidden])"))
    uids = [li.get_attribute("data-chunk-uid") for li in driver.find_elements(By.CSS_SELECTOR, ".turn .sources li")]
    return {uid.split(":")[2] for uid in uids}


def test_sign_in_through_the_provider_and_see_what_the_groups_allow(sso, corpus, browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 90)
    sso.set_user("ann", groups=["engineers"])
    browser.get(f"{live_server.url}/login/")
    browser.find_element(By.ID, "sso-login").click()
    _provider_login(browser, wait, "ann")
    wait.until(lambda d: d.current_url.rstrip("/") == live_server.url)
    assert "ann" in browser.find_element(By.CSS_SELECTOR, "header .who").text
    assert _ask_sources(browser, wait, live_server) == {"open", "eng-doc"}

    # Sign out (the provider's session ends too: its logout page), then out of the group.
    browser.find_element(By.CSS_SELECTOR, "header .who button").click()
    wait.until(lambda d: d.current_url.startswith(sso.issuer))
    wait.until(lambda d: d.find_elements(By.ID, "logout-yes"))[0].click()
    wait.until(lambda d: d.current_url.startswith(f"{live_server.url}/login/"))
    sso.set_user("ann", groups=["sellers"])
    browser.find_element(By.ID, "sso-login").click()
    _provider_login(browser, wait, "ann")  # the provider asks again: its session was ended
    wait.until(lambda d: d.current_url.rstrip("/") == live_server.url)
    assert _ask_sources(browser, wait, live_server) == {"open", "sales-doc"}


def test_learning_and_admin_pages_sign_in_through_the_provider(sso, browser, live_server, settings):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    settings.KNOWHUB_OIDC_STAFF_GROUP = "knowhub-admins"
    wait = WebDriverWait(browser, 60)
    sso.set_user("root", groups=["knowhub-admins"])
    browser.get(f"{live_server.url}/admin/")
    wait.until(lambda d: d.find_elements(By.ID, "sso-login"))
    browser.find_element(By.ID, "sso-login").click()
    _provider_login(browser, wait, "root")
    wait.until(lambda d: d.current_url.startswith(f"{live_server.url}/admin/"))
    assert browser.find_elements(By.ID, "site-name")  # the admin's index, not its login form
    assert not browser.find_elements(By.ID, "login-form")

    browser.get(f"{live_server.url}/learn/login/?next=/learn/")
    wait.until(lambda d: d.current_url.startswith(f"{live_server.url}/learn/"))  # already signed in


def test_people_create_and_revoke_their_api_token(sso, browser, live_server):
    from rest_framework.authtoken.models import Token
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    sso.set_user("ann", groups=[])
    browser.get(f"{live_server.url}/account/tokens/")
    browser.find_element(By.ID, "sso-login").click()
    _provider_login(browser, wait, "ann")
    wait.until(lambda d: d.current_url.startswith(f"{live_server.url}/account/tokens/"))
    assert "no API token" in browser.find_element(By.ID, "token-state").text
    browser.find_element(By.ID, "create-token").click()
    key = wait.until(lambda d: d.find_elements(By.ID, "new-token"))[0].text
    token = Token.objects.get(key=key)
    assert token.user.username == "ann"
    browser.find_element(By.ID, "revoke-token").click()
    wait.until(lambda d: "no API token" in d.find_element(By.ID, "token-state").text)
    assert not Token.objects.filter(key=key).exists()
