"""The dashboards in a real headless Chromium (Debian's, driven through its chromedriver by selenium) against the
real oracle and learner on loopback: a run is started from the learner's page, its curve appears and grows without
a reload, and it is cancelled from the page; past comparisons show their claims and plots; the oracle's page lists
sessions to the admin without their values and shows a session's values, live, once given its token.

Screenshots go to ``$BUDGETLAB_SCREENSHOTS`` (default: a ``screenshots`` folder in pytest's temporary directory);
each test prints where.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from budgetlab.service_client import tls_context
from tests.dashboard_helpers import HAVE_CHROMIUM, NO_CHROMIUM, chromium, js, screenshots, shoot, wait, write_report
from tests.helpers import ADMIN_TOKEN
from tests.servers import learner_server, oracle_server, serve_in_thread

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

RUN_PARAMS = "d=20, s_plus=3, s_minus=2, n_train=50000, n_test=100"

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("browser")
    write_report(root / "reports", tmp_path_factory)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BUDGETLAB_REPORTS_DIR", str(root / "reports"))
        with oracle_server(f"sqlite:///{root / 'ledger.db'}") as oracle, \
                learner_server(f"sqlite:///{root / 'runs.db'}", oracle) as learner:
            env.setenv("BUDGETLAB_LEARNER_URL", learner)
            yield oracle, learner


@pytest.fixture(scope="module")
def browser(services: tuple[str, str]) -> Iterator[Any]:
    # Started after the services and so stopped before them: its event streams close first.
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshots(tmp_path_factory.mktemp("screenshots"))


def fill(driver: Any, element_id: str, text: str) -> None:
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def test_the_dashboards_in_a_browser(browser: Any, services: tuple[str, str], shots: Path, tmp_path: Path) -> None:
    # One test for both pages: xdist may put the tests of one module on different workers, each of which would
    # start the browser and the services and write the report again.
    a_run_started_from_the_page_grows_its_curve_live_and_is_cancelled_from_the_page(browser, services, shots)
    past_comparisons_show_their_claims_and_plots(browser, services, shots)
    the_oracle_page_hides_values_without_the_token_and_shows_them_live_with_it(browser, services, shots)
    the_admin_sees_the_accounts_their_allowances_and_sessions_live(browser, services, shots)
    a_ledger_that_takes_no_writes_is_said_on_the_oracle_page(browser, services, shots, tmp_path)


def a_run_started_from_the_page_grows_its_curve_live_and_is_cancelled_from_the_page(
        browser: Any, services: tuple[str, str], shots: Path) -> None:
    oracle, learner = services
    browser.get(f"{learner}/")
    wait(lambda: js(browser, "return document.querySelectorAll('#algorithm option').length") > 5, "algorithms listed")
    # The form lists the oracle's datasets, each with its number of attributes (n_attributes on the wire).
    listed = "return document.querySelector(\"#datasets option[value='mnist-3v5']\")?.textContent"
    assert wait(lambda: js(browser, listed), "the datasets listed") == "classification, d=784, 900 train"
    js(browser, "window.neverReloaded = true")
    fill(browser, "dataset-params", RUN_PARAMS)
    fill(browser, "per-example", "4")
    fill(browser, "seed", "7")
    fill(browser, "eval-every", "150")
    browser.find_element(By.ID, "start").click()

    run_id = wait(lambda: js(browser, "return document.querySelector('#runs tr[data-run]')?.dataset.run"),
                  "the run appears in the table")
    points = f"return +(document.querySelector(\"tr[data-run='{run_id}'] svg.sparkline\")?.dataset.points || 0)"
    first = wait(lambda: js(browser, points) >= 2 and js(browser, points), "the curve appears")
    wait(lambda: js(browser, points) >= first + 2, "the curve grows")
    wait(lambda: browser.find_element(By.ID, "run-state").text.startswith(f"run {run_id[:10]}: running, "),
         "the status line says the run it started is running")
    plotted = "return [...document.querySelectorAll('#run-plots svg.plot')].map(p => +p.dataset.points)"
    wait(lambda: all(n >= 2 for n in js(browser, plotted)) and len(js(browser, plotted)) == 2,
         "the run's two plots (against attributes paid and examples seen) are drawn")
    assert "oracle dashboard" in browser.find_element(By.ID, "oracle-link").text
    assert browser.find_element(By.ID, "oracle-link").get_attribute("href").rstrip("/") == oracle
    shoot(browser, shots, "learner-run-live.png")

    browser.find_element(By.CSS_SELECTOR, f"tr[data-run='{run_id}'] button[data-cancel]").click()
    wait(lambda: js(browser, f"return document.querySelector(\"tr[data-run='{run_id}']\").dataset.status")
         == "cancelled", "the run shows as cancelled")
    # The line under the form followed the run it started, and its progress bar is grey, not an error's red.
    wait(lambda: browser.find_element(By.ID, "run-state").text.startswith(f"run {run_id[:10]} cancelled after "),
         "the status line follows the run")
    assert js(browser, f"return document.querySelector(\"tr[data-run='{run_id}'] .gauge-used\").classList.value") \
        == "gauge-used stopped"
    token = js(browser, "return JSON.parse(localStorage.getItem('budgetlab.learner.token'))")
    info = httpx.get(f"{learner}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {token}"},
                     verify=tls_context()).json()
    assert info["status"] == "cancelled"
    assert (info["request"]["seed"], info["request"]["eval_every"], info["request"]["budget"]["per_example"]) == \
        (7, 150, 4)
    assert info["request"]["dataset_params"]["n_train"] == 50_000
    wait(lambda: js(browser, points) == len(info["curve"]) >= first + 2,
         f"the page shows the run's whole curve ({len(info['curve'])} points)")
    assert js(browser, "return window.neverReloaded === true"), "the page was reloaded"
    shoot(browser, shots, "learner-run-cancelled.png")

    # The run is a regression: asked for the 0-1 error, its row and its panel say there is none instead of a number.
    Select(browser.find_element(By.ID, "metric")).select_by_value("zero_one")
    cell = f"return document.querySelector(\"tr[data-run='{run_id}']\").cells[7]"
    wait(lambda: js(browser, cell + ".textContent") == "—", "no 0-1 error in the regression run's row")
    assert js(browser, cell + ".title") == "no 0-1 error: a regression"
    assert "no 0-1 error: a regression" in browser.find_element(By.ID, "run-plots").text
    shoot(browser, shots, "learner-regression-no-zero-one.png")
    Select(browser.find_element(By.ID, "metric")).select_by_value("normalized_mse")


def past_comparisons_show_their_claims_and_plots(browser: Any, services: tuple[str, str], shots: Path) -> None:
    browser.get(f"{services[1]}/?oracle=javascript:alert(document.domain)")
    summary = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] summary"),
                   "the report is listed")[0]
    assert "1 of 1 hold" in summary.text and "10/10 runs completed" in summary.text
    summary.click()
    claims = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] table.claims tbody tr"),
                  "the claims table")
    assert "full information beats four attributes per example" in claims[0].text and "holds" in claims[0].text
    # AER on 40 examples, 4 of 64 pixels each, stays near the zero predictor: the report's line saying why is shown
    near = browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] ul.diagnoses li")
    assert len(near) == 1 and near[0].text.startswith("AER: aer ended at ") and "observed 2.3 times" in near[0].text
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR,
                                                        "details[data-report='demo'] table.scores thead th")]
    assert headers == ["algorithm", "per example", "test MSE", "0-1 error", "attributes paid", "runs ok"], \
        "the scores table shows only the scores that fit ±1 labels, as the report's"
    loaded = ("return [...document.querySelectorAll(\"details[data-report='demo'] img\")]"
              ".map(i => i.complete && i.naturalWidth > 100)")
    wait(lambda: js(browser, loaded) == [True, True], "both plots load")
    js(browser, "document.querySelector(\"details[data-report='demo']\").scrollIntoView()")
    assert not browser.find_element(By.ID, "oracle-link").get_attribute("href").startswith("javascript:"), \
        "a link from the page's query runs script"
    shoot(browser, shots, "learner-comparison.png")


def the_oracle_page_hides_values_without_the_token_and_shows_them_live_with_it(
        browser: Any, services: tuple[str, str], shots: Path) -> None:
    oracle, learner = services
    created = httpx.post(f"{oracle}/v1/sessions", json={
        "dataset": "sparse-gaussian", "dataset_params": {"d": 10, "n_train": 100, "n_test": 10, "s_plus": 2,
                                                         "s_minus": 2},
        "budget": {"per_example": 3, "total": 20}}, verify=tls_context()).json()
    sid, auth = created["id"], {"Authorization": f"Bearer {created['token']}"}

    def observe(attributes: list[int]) -> list[float]:
        example = httpx.post(f"{oracle}/v1/sessions/{sid}/next", headers=auth, verify=tls_context()).json()["example"]
        return httpx.post(f"{oracle}/v1/sessions/{sid}/observe", headers=auth,
                          json={"example": example, "attributes": attributes}, verify=tls_context()).json()["values"]

    values = observe([1, 2])
    browser.get(f"{oracle}/")
    js(browser, "window.neverReloaded = true")
    wait(lambda: "sessions on this oracle, none held by this page: sign in with the admin token" in
         browser.find_element(By.ID, "sessions-hint").text, "without a token, the page lists no session, and says why")
    assert not browser.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
    assert browser.find_element(By.ID, "learner-link").get_attribute("href").rstrip("/") == learner

    fill(browser, "admin-token", ADMIN_TOKEN)
    browser.find_element(By.ID, "admin-signin").click()
    row = wait(lambda: browser.find_elements(By.CSS_SELECTOR, f"#sessions tr[data-session='{sid}']"),
               "the admin sees the session")[0]
    wait(lambda: "compliant" in row.find_element(By.CSS_SELECTOR, "td.audit").text, "its audit verdict")
    assert "2 spent · 18 left of 20" in row.text
    row.click()
    wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#ledger tbody tr")) == 3, "its ledger as links")
    assert "Values hidden" in browser.find_element(By.ID, "ledger-note").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#ledger td.value")
    page = browser.find_element(By.TAG_NAME, "body").text
    assert not [v for v in values if str(v)[:7] in page], "a value is on the page without the session's token"
    shoot(browser, shots, "oracle-admin-no-values.png")

    fill(browser, "held-id", sid)
    fill(browser, "held-token", created["token"])
    browser.find_element(By.CSS_SELECTOR, "#held-form button[type=submit]").click()
    shown = "return [...document.querySelectorAll('#ledger tr[data-kind=observe] td.value')].map(td => td.textContent)"
    cells = wait(lambda: js(browser, shown), "the values, once the token is given")
    assert sorted(float(c) for c in cells) == pytest.approx(sorted(values), rel=1e-5)

    more = observe([3])
    wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#ledger tr[data-seq='5'] td.value"), "the new row, live")
    assert browser.find_element(By.CSS_SELECTOR, "#ledger tr[data-seq='4']").get_attribute("data-kind") == "label"
    new = browser.find_element(By.CSS_SELECTOR, "#ledger tr[data-seq='5'] td.value").text
    assert float(new) == pytest.approx(more[0], rel=1e-5)
    assert js(browser, "return window.neverReloaded === true"), "the page was reloaded"
    shoot(browser, shots, "oracle-session-values.png")


def the_admin_sees_the_accounts_their_allowances_and_sessions_live(
        browser: Any, services: tuple[str, str], shots: Path) -> None:
    oracle, _ = services
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    keys = {}
    for name, allowance in [("student-a", {"total": 20, "per_example": 3, "sessions": 5, "evaluations": 4}),
                            ("student-b", {"per_example": 2, "splits": ["train"]})]:
        created = httpx.post(f"{oracle}/v1/accounts", json={"name": name, "allowance": allowance}, headers=admin,
                             verify=tls_context())
        keys[name] = (created.json()["account"]["id"], created.json()["key"])
    body = {"dataset": "sparse-gaussian", "order": "pool",
            "dataset_params": {"d": 10, "n_train": 100, "n_test": 10, "s_plus": 2, "s_minus": 2}}
    opened = httpx.post(f"{oracle}/v1/sessions", json=body,
                        headers={"Authorization": f"Bearer {keys['student-a'][1]}"}, verify=tls_context()).json()
    auth = {"Authorization": f"Bearer {opened['token']}"}
    for example in range(2):
        httpx.post(f"{oracle}/v1/sessions/{opened['id']}/observe", json={"example": example, "attributes": [0, 1, 2]},
                   headers=auth, verify=tls_context())
    httpx.post(f"{oracle}/v1/sessions", json=body, headers={"Authorization": f"Bearer {keys['student-b'][1]}"},
               verify=tls_context())

    browser.get(f"{oracle}/")  # still signed in as the admin (this tab's session storage)
    js(browser, "window.neverReloaded = true")
    a_id, b_id = keys["student-a"][0], keys["student-b"][0]

    def text(selector: str) -> str:  # read in one go: the live page may redraw the table between two calls
        return js(browser, f"return document.querySelector(\"{selector}\")?.innerText || ''")

    listed = "return [...document.querySelectorAll('#sessions tbody tr')].map(r => r.dataset.session)"
    row = wait(lambda: text(f"#accounts tr[data-account='{a_id}']"), "the admin sees the accounts")
    assert "student-a" in row and "k ≤ 3 · every dataset" in row
    assert "6 spent · 14 left of 20" in row and "0 of 4" in row and "1 of 5" in row
    other = text(f"#accounts tr[data-account='{b_id}']")
    assert "test shielded" in other and "0 spent · no limit" in other
    # The page follows the spend without a reload.
    httpx.post(f"{oracle}/v1/sessions/{opened['id']}/observe", json={"example": 2, "attributes": [0, 1, 2]},
               headers=auth, verify=tls_context())
    wait(lambda: "9 spent · 11 left of 20" in text(f"#accounts tr[data-account='{a_id}']"), "the account's spend, live")

    js(browser, f"document.querySelector(\"#accounts tr[data-account='{a_id}']\").click()")
    # The account's sessions, and the one this page holds a token for (always listed, values shown).
    wait(lambda: opened["id"] in js(browser, listed) and len(js(browser, listed)) == 2, "clicked, its sessions")
    owners = "return [...document.querySelectorAll('#sessions tbody tr [data-account]')].map(d => d.dataset.account)"
    assert sorted(js(browser, owners)) == ["", a_id]
    assert "the sessions of the account student-a, newest first (admin), and those this page holds tokens for" in text(
        "#sessions-sub")
    # The figures follow the filter: the account's one open session and its 10 rows (its opening, 9 values), not the
    # oracle's.
    figures = "return [...document.querySelectorAll('#counts div')].map(d => d.innerText.replace(/\\s+/g, ' '))"
    wait(lambda: js(browser, figures) == ["1 sessions", "1 open", "0 closed", "10 ledger rows"],
         "the account's figures")
    session_row = text(f"#sessions tr[data-session='{opened['id']}']")
    assert "account student-a" in session_row and "9 spent · its account's 11 left" in session_row
    shoot(browser, shots, "oracle-accounts.png")
    browser.find_element(By.ID, "all-sessions").click()
    wait(lambda: len(js(browser, listed)) >= 3, "every session again")
    rows = js(browser, "return [...document.querySelectorAll('#sessions tbody tr')].map(r => r.innerText)")
    assert any("anonymous" in r for r in rows), "the anonymous sessions say so"
    assert js(browser, "return window.neverReloaded === true"), "the page was reloaded"

    browser.find_element(By.ID, "admin-signout").click()
    wait(lambda: not browser.find_element(By.ID, "accounts-panel").is_displayed(), "without the admin, no account")


def a_ledger_that_takes_no_writes_is_said_on_the_oracle_page(browser: Any, services: tuple[str, str], shots: Path,
                                                             tmp_path: Path) -> None:
    """A banner says what /readyz says, while the ledger takes no writes; the pages of a ledger that takes them
    show none (the learner's page relays its oracle's state: test_dashboard_api)."""
    from sqlalchemy import event

    from client.dashboards import with_page
    from server.app import create_app
    from server.config import Settings

    for url in services:
        browser.get(f"{url}/")
        alert = "oracle-alert" if url == services[1] else "ledger-alert"
        wait(lambda a=alert: js(browser, "return document.getElementById('conn').textContent") == "live",
             "the page's stream is live")
        assert js(browser, f"return document.getElementById('{alert}').hidden"), f"{url} shows {alert}"
    app = with_page(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'read-only.db'}", batch_process=False)),
                    "oracle.html")
    # The ledger refuses writes from now on, as a read-only file would (every connection the oracle opens).
    db = app.state.sessions.db
    event.listen(db.engine, "connect", lambda conn, _: conn.execute("PRAGMA query_only = 1"))
    db._close_idle()
    with serve_in_thread(app) as url:
        browser.get(f"{url}/")
        wait(lambda: not js(browser, "return document.getElementById('ledger-alert').hidden"), "the banner is shown")
        assert browser.find_element(By.ID, "ledger-alert-code").text == "read_only"
        assert "refuses writes" in browser.find_element(By.ID, "ledger-alert-detail").text
        shoot(browser, shots, "oracle-ledger-read-only.png")
    app.state.sessions.close_connections()

