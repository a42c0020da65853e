"""The explorer end to end in headless Chromium: sign-in, browse, filter (OData and the
builder), page, edit every EDM type and read it back through the Table API, a refused stale
edit, delete, export, a cross-site attempt, an XSS value, keyboard and labels."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import os
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, ThreadedStubServer

from .conftest import screenshot
from .support import TableApi

try:
    from selenium.common.exceptions import (
        NoAlertPresentException,
        StaleElementReferenceException,
        TimeoutException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - selenium is in the dev extra
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise
    pytest.skip(
        "explorer browser tests need selenium (pip install -e '.[dev]')", allow_module_level=True
    )


def wait_for(driver: Any, condition: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll ``condition`` until it returns something true (TimeoutException otherwise)."""
    waiting = WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
    )
    return waiting.until(lambda _: condition())


def by_id(driver: Any, element_id: str) -> Any:
    return driver.find_element(By.ID, element_id)


def shown(driver: Any, view: str) -> bool:
    return bool(by_id(driver, view).is_displayed())


def alert_text(driver: Any) -> str:
    return str(by_id(driver, "alert").text)


def accept_confirm(driver: Any) -> None:
    def dialog() -> Any:
        try:
            return driver.switch_to.alert
        except NoAlertPresentException:
            return None

    wait_for(driver, dialog).accept()


def sign_in(driver: Any, stub: ThreadedStubServer, key: str = DEV_KEY) -> None:
    driver.get(stub.server.explorer_url)
    wait_for(driver, lambda: shown(driver, "signin-view") or shown(driver, "tables-view"))
    if shown(driver, "tables-view"):
        return
    account = by_id(driver, "signin-account")
    account.clear()
    account.send_keys(DEV_ACCOUNT)
    by_id(driver, "signin-key").send_keys(key)
    by_id(driver, "signin-submit").click()


@pytest.fixture
def page(browser: Any, stub: ThreadedStubServer) -> Any:
    """The browser, signed in, on the tables view."""
    sign_in(browser, stub)
    wait_for(browser, lambda: shown(browser, "tables-view"))
    return browser


def open_table(driver: Any, name: str) -> None:
    by_id(driver, "nav-tables").click()
    wait_for(driver, lambda: by_id(driver, "tables-grid").get_attribute("aria-busy") == "false")
    click(driver, f"button[aria-label='Open table {name}']")
    wait_for(driver, lambda: shown(driver, "entities-view"))
    wait_for(driver, lambda: by_id(driver, "entities-title").text == f"Table {name}")


def click(driver: Any, css: str) -> None:
    """Click the element ``css`` finds once it is there (again if it was re-rendered)."""

    def clicked() -> bool:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if not found:
            return False
        found[0].click()
        return True

    wait_for(driver, clicked)


def idle(driver: Any, grid: str) -> None:
    """Wait until the grid ``grid`` has loaded (the page clears its ``aria-busy``)."""
    wait_for(driver, lambda: by_id(driver, grid).get_attribute("aria-busy") == "false")


def press(driver: Any, css: str, key: str) -> None:
    """Focus the element ``css`` finds and press ``key`` on it (again if re-rendered)."""

    def pressed() -> bool:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if not found:
            return False
        found[0].send_keys(key)
        return True

    wait_for(driver, pressed)


def row_keys(driver: Any) -> list[str]:
    """The RowKeys the entities grid shows (read in one script: no half-rendered grid)."""
    keys = driver.execute_script(
        "return Array.from(document.querySelectorAll('#entities-grid tbody tr'))"
        ".filter((r) => r.cells.length > 1).map((r) => r.cells[1].textContent)"
    )
    assert isinstance(keys, list)
    return [str(k) for k in keys]


def run_filter(driver: Any, text: str) -> None:
    box = by_id(driver, "filter-text")
    box.clear()
    box.send_keys(text)
    by_id(driver, "run-query").click()


def wait_rows(driver: Any, expected: list[str]) -> None:
    try:
        wait_for(driver, lambda: row_keys(driver) == expected)
    except TimeoutException:
        raise AssertionError(
            f"rows {row_keys(driver)} != {expected}; {alert_text(driver)}"
        ) from None


def fetch(
    driver: Any, url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Fetch ``url`` from the page (with its cookie); ``{"status", "text"}``."""
    result = driver.execute_async_script(
        """
        const [url, method, headers, done] = arguments;
        fetch(url, {method, headers, credentials: "same-origin"})
          .then(async (r) => done({status: r.status, text: await r.text()}))
          .catch((e) => done({status: 0, text: String(e)}));
        """,
        url,
        method,
        headers or {},
    )
    assert isinstance(result, dict)
    return result


# --------------------------------------------------------------------------- sign-in


def test_sign_in_is_required(browser: Any, stub: ThreadedStubServer, table_api: TableApi) -> None:
    table_api.create_table("SecretPlans")
    browser.get(stub.server.explorer_url)
    browser.delete_all_cookies()
    browser.get(stub.server.explorer_url)
    wait_for(browser, lambda: shown(browser, "signin-view"))
    assert not shown(browser, "tables-view")
    assert not by_id(browser, "nav").is_displayed()
    assert "SecretPlans" not in browser.page_source
    assert fetch(browser, "api/tables")["status"] == 401
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly, and none yet
    screenshot(browser, "signin")
    sign_in(browser, stub, key=base64.b64encode(b"wrong").decode())
    wait_for(browser, lambda: "SignInFailed" in alert_text(browser))
    assert shown(browser, "signin-view")
    by_id(browser, "signin-key").clear()
    sign_in(browser, stub)
    wait_for(browser, lambda: shown(browser, "tables-view"))
    wait_for(browser, lambda: "SecretPlans" in by_id(browser, "tables-grid").text)
    assert browser.execute_script("return document.cookie") == ""  # the session is HttpOnly
    by_id(browser, "signout").click()
    wait_for(browser, lambda: shown(browser, "signin-view"))
    assert fetch(browser, "api/tables")["status"] == 401


# --------------------------------------------------------------------------- browse


def test_tables_are_listed_created_and_deleted(page: Any, table_api: TableApi) -> None:
    table_api.create_table("Movies")
    for n in range(3):
        table_api.insert("Movies", {"PartitionKey": "action", "RowKey": str(n)})
    by_id(page, "refresh-tables").click()
    grid = by_id(page, "tables-grid")
    wait_for(page, lambda: "Movies\n3" in grid.text or "Movies 3" in grid.text)
    by_id(page, "new-table").send_keys("Scratch")
    by_id(page, "create-table").click()
    wait_for(page, lambda: "Table Scratch created." in by_id(page, "status").text)
    wait_for(page, lambda: "Scratch" in by_id(page, "tables-grid").text)
    assert "Scratch" in table_api.tables()
    by_id(page, "new-table").send_keys("Movies")
    by_id(page, "create-table").click()
    wait_for(page, lambda: "409 TableAlreadyExists" in alert_text(page))
    screenshot(page, "tables")
    page.find_element(By.CSS_SELECTOR, "button[aria-label='Delete table Scratch']").click()
    accept_confirm(page)
    wait_for(page, lambda: "Table Scratch deleted." in by_id(page, "status").text)
    assert "Scratch" not in table_api.tables()


def seed_people(api: TableApi) -> None:
    api.create_table("People")
    for n in range(12):
        api.insert(
            "People",
            {
                "PartitionKey": "team" + str(n // 6),
                "RowKey": f"{n:02d}",
                "Name": "O'Brien" if n == 7 else f"Person {n}",
                "Age": 20 + n,
                "Score@odata.type": "Edm.Int64",
                "Score": str(2**60 + n),
            },
        )


def test_entities_show_types_and_filter_with_odata_and_the_builder(
    page: Any, table_api: TableApi
) -> None:
    seed_people(table_api)
    open_table(page, "People")
    wait_rows(page, [f"{n:02d}" for n in range(12)])
    headers = [h.text for h in page.find_elements(By.CSS_SELECTOR, "#entities-grid thead th")]
    assert headers[:3] == [
        "PartitionKey\nEdm.String",
        "RowKey\nEdm.String",
        "Timestamp\nEdm.DateTime",
    ]
    assert "Age\nEdm.Int32" in headers
    assert "Score\nEdm.Int64" in headers
    assert str(2**60 + 11) in by_id(page, "entities-grid").text  # beyond 2**53, exact
    run_filter(page, "Age ge 29 and PartitionKey eq 'team1'")
    wait_rows(page, ["09", "10", "11"])
    run_filter(page, "startswith(Name, 'O')")
    wait_for(page, lambda: "501 NotImplemented" in alert_text(page))
    # the builder: Name eq 'O''Brien' joined to an empty filter, then Score with and
    by_id(page, "b-clear").click()
    wait_rows(page, [f"{n:02d}" for n in range(12)])
    by_id(page, "b-prop").send_keys("Name")
    Select(by_id(page, "b-type")).select_by_value("Edm.String")
    by_id(page, "b-value").send_keys("O'Brien")
    by_id(page, "b-add").click()
    wait_rows(page, ["07"])
    assert by_id(page, "filter-text").get_attribute("value") == "Name eq 'O''Brien'"
    for element, text in (("b-prop", "Score"), ("b-value", str(2**60 + 7))):
        by_id(page, element).clear()
        by_id(page, element).send_keys(text)
    Select(by_id(page, "b-type")).select_by_value("Edm.Int64")
    Select(by_id(page, "b-op")).select_by_value("ge")
    by_id(page, "b-add").click()
    wait_for(
        page,
        lambda: (
            by_id(page, "filter-text").get_attribute("value")
            == f"(Name eq 'O''Brien') and Score ge {2**60 + 7}L"
        ),
    )
    wait_rows(page, ["07"])
    screenshot(page, "filter")
    # columns can be hidden
    by_id(page, "b-clear").click()
    wait_rows(page, [f"{n:02d}" for n in range(12)])
    label = page.find_element(By.XPATH, "//div[@id='column-choices']//label[text()='Age']")
    age = label.get_attribute("for")
    by_id(page, age).click()
    wait_for(
        page,
        lambda: all(
            "Age" not in h.text
            for h in page.find_elements(By.CSS_SELECTOR, "#entities-grid thead th")
        ),
    )
    assert "select=Name%2CScore" in by_id(page, "export-csv").get_attribute("href")
    screenshot(page, "entities")
    by_id(page, age).click()


def test_pages_follow_continuation_tokens(page: Any, table_api: TableApi) -> None:
    if "People" not in table_api.tables():
        seed_people(table_api)
    open_table(page, "People")
    Select(by_id(page, "page-size")).select_by_visible_text("5")
    run_filter(page, "")
    wait_rows(page, ["00", "01", "02", "03", "04"])
    assert by_id(page, "prev-page").get_attribute("disabled") == "true"
    by_id(page, "next-page").click()
    wait_rows(page, ["05", "06", "07", "08", "09"])
    by_id(page, "next-page").click()
    wait_rows(page, ["10", "11"])
    assert by_id(page, "next-page").get_attribute("disabled") == "true"
    assert by_id(page, "page-info").text == "Page 3, 2 entities"
    by_id(page, "prev-page").click()
    wait_rows(page, ["05", "06", "07", "08", "09"])
    Select(by_id(page, "page-size")).select_by_visible_text("50")
    run_filter(page, "")
    wait_rows(page, [f"{n:02d}" for n in range(12)])


# --------------------------------------------------------------------------- one entity

EDITS = [
    ("Big", "Edm.Int64", "9223372036854775807"),
    ("Odd", "Edm.Int64", "-9007199254740993"),
    ("Small", "Edm.Int32", "-2147483648"),
    ("Nan", "Edm.Double", "NaN"),
    ("Inf", "Edm.Double", "-Infinity"),
    ("Max", "Edm.Double", "1.7976931348623157e+308"),
    ("When", "Edm.DateTime", "2024-02-29T23:59:59.1234567Z"),
    ("Id", "Edm.Guid", "0f8fad5b-d9cb-469f-a165-70867728950e"),
    ("Bytes", "Edm.Binary", "AP8Q"),
    ("Flag", "Edm.Boolean", "false"),
    ("Text", "Edm.String", "snow ☃ and \U0001f600"),
]


#: What the Table API answers for EDITS (full metadata: JSON numbers and Booleans for Int32,
#: finite Doubles and Booleans, annotated text for the rest).
READ_BACK: dict[str, tuple[Any, str | None]] = {
    "Big": ("9223372036854775807", "Edm.Int64"),
    "Odd": ("-9007199254740993", "Edm.Int64"),
    "Small": (-2147483648, None),
    "Nan": ("NaN", "Edm.Double"),
    "Inf": ("-Infinity", "Edm.Double"),
    "Max": (1.7976931348623157e308, None),
    "When": ("2024-02-29T23:59:59.1234567Z", "Edm.DateTime"),
    "Id": ("0f8fad5b-d9cb-469f-a165-70867728950e", "Edm.Guid"),
    "Bytes": ("AP8Q", "Edm.Binary"),
    "Flag": (False, None),
    "Text": ("snow ☃ and \U0001f600", None),
}


def open_entity(driver: Any, pk: str, rk: str) -> None:
    wait_for(driver, lambda: by_id(driver, "entities-grid").get_attribute("aria-busy") == "false")
    click(driver, f"button[aria-label='Open entity {pk} / {rk}']")
    wait_for(driver, lambda: shown(driver, "entity-view"))
    wait_for(driver, lambda: by_id(driver, "entity-title").text.startswith(f"Entity {pk} / {rk}"))


def add_property(driver: Any, name: str, edm: str, value: str) -> None:
    by_id(driver, "add-prop").click()
    row = driver.find_elements(By.CSS_SELECTOR, "#props .prop")[-1]
    row.find_element(By.CSS_SELECTOR, ".p-name").send_keys(name)
    Select(row.find_element(By.CSS_SELECTOR, ".p-type")).select_by_value(edm)
    editor = row.find_element(By.CSS_SELECTOR, ".p-value")
    if edm == "Edm.Boolean":
        Select(editor).select_by_value(value)
    else:
        editor.send_keys(value)


def form_values(driver: Any) -> list[tuple[str, str, str]]:
    """(name, type, value) of each property row of the entity form, read in one script."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#props .prop')).map((r) => ["
        "r.querySelector('.p-name').value, r.querySelector('.p-type').value,"
        "r.querySelector('.p-value').value])"
    )
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_every_edm_type_is_edited_exactly(page: Any, table_api: TableApi) -> None:
    table_api.create_table("Typed")
    table_api.insert("Typed", {"PartitionKey": "p", "RowKey": "r", "Old": "x"})
    open_table(page, "Typed")
    open_entity(page, "p", "r")
    page.find_element(By.CSS_SELECTOR, "button[aria-label='Remove property Old']").click()
    add_property(page, "Range", "Edm.Int32", "2147483648")  # refused in the page
    by_id(page, "save-entity").click()
    wait_for(page, lambda: "out of the Edm.Int32 range" in by_id(page, "props").text)
    assert "Old" in table_api.get("Typed", "p", "r")  # nothing was written
    page.find_elements(By.CSS_SELECTOR, "#props .prop")[-1].find_element(
        By.TAG_NAME, "button"
    ).click()
    for name, edm, value in EDITS:
        add_property(page, name, edm, value)
    by_id(page, "save-entity").click()
    wait_for(page, lambda: "Entity p / r saved." in by_id(page, "status").text)
    screenshot(page, "entity")
    stored = table_api.get("Typed", "p", "r")  # full metadata, as the service writes it
    assert "Old" not in stored
    for name, (value, annotation) in READ_BACK.items():
        assert stored[name] == value, name
        assert stored.get(name + "@odata.type") == annotation, name
    # reopened, the page shows every value as stored (in the stored order: after a replace
    # Storage keeps properties in name order, as the recordings show)
    by_id(page, "reload-entity").click()
    wait_for(page, lambda: form_values(page) == sorted(EDITS))


def test_a_stale_edit_is_refused(page: Any, table_api: TableApi) -> None:
    table_api.create_table("Race")
    table_api.insert("Race", {"PartitionKey": "p", "RowKey": "r", "Seats": 10})
    open_table(page, "Race")
    open_entity(page, "p", "r")
    table_api.merge("Race", "p", "r", {"Seats": 9})  # someone else, meanwhile
    editor = page.find_element(By.CSS_SELECTOR, "#props .p-value")
    editor.clear()
    editor.send_keys("42")
    by_id(page, "save-entity").click()
    wait_for(page, lambda: "412 UpdateConditionNotSatisfied" in alert_text(page))
    assert "not saved" in alert_text(page)
    assert table_api.get("Race", "p", "r")["Seats"] == 9
    assert editor.get_attribute("value") == "42"  # the edit is still in the form
    by_id(page, "reload-entity").click()
    wait_for(
        page,
        lambda: page.find_element(By.CSS_SELECTOR, "#props .p-value").get_attribute("value") == "9",
    )


def test_insert_and_delete(page: Any, table_api: TableApi) -> None:
    table_api.create_table("Crud")
    open_table(page, "Crud")
    by_id(page, "new-entity").click()
    wait_for(page, lambda: shown(page, "entity-view"))
    by_id(page, "e-pk").send_keys("k1")
    by_id(page, "e-rk").send_keys("k2")
    row = page.find_element(By.CSS_SELECTOR, "#props .prop")
    row.find_element(By.CSS_SELECTOR, ".p-name").send_keys("Note")
    row.find_element(By.CSS_SELECTOR, ".p-value").send_keys("hello")
    by_id(page, "save-entity").click()
    wait_for(page, lambda: "Entity k1 / k2 inserted." in by_id(page, "status").text)
    assert table_api.get("Crud", "k1", "k2")["Note"] == "hello"
    by_id(page, "delete-entity").click()
    accept_confirm(page)
    wait_for(page, lambda: "Entity k1 / k2 deleted." in by_id(page, "status").text)
    wait_for(page, lambda: shown(page, "entities-view"))
    assert table_api.status_of("Crud", "k1", "k2") == 404


def test_export_of_the_current_query(page: Any, table_api: TableApi) -> None:
    if "People" not in table_api.tables():
        seed_people(table_api)
    open_table(page, "People")
    run_filter(page, "PartitionKey eq 'team1' and Age lt 28")
    wait_rows(page, ["06", "07"])
    jsonl = fetch(page, by_id(page, "export-jsonl").get_attribute("href"))
    assert jsonl["status"] == 200
    lines = [json.loads(line) for line in jsonl["text"].splitlines()]
    assert [line["RowKey"] for line in lines] == ["06", "07"]
    assert lines[1]["Name"] == "O'Brien"
    assert lines[1]["Score"] == str(2**60 + 7)
    assert lines[1]["Score@odata.type"] == "Edm.Int64"
    assert lines[1]["Age"] == 27
    exported = fetch(page, by_id(page, "export-csv").get_attribute("href"))
    rows = list(csv.reader(io.StringIO(exported["text"])))
    assert rows[0] == [
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "Name",
        "Name@type",
        "Age",
        "Age@type",
        "Score",
        "Score@type",
    ]
    assert rows[2][3:] == ["O'Brien", "Edm.String", "27", "Edm.Int32", str(2**60 + 7), "Edm.Int64"]
    assert len(rows) == 3
    query = urllib.parse.urlparse(by_id(page, "export-csv").get_attribute("href")).query
    assert urllib.parse.parse_qs(query)["filter"] == ["PartitionKey eq 'team1' and Age lt 28"]


# --------------------------------------------------------------------------- security


def test_a_cross_site_attempt_is_refused(
    page: Any, stub: ThreadedStubServer, table_api: TableApi
) -> None:
    # from the page itself but without the CSRF token
    refused = fetch(page, "api/tables", "POST", {"Content-Type": "application/json"})
    assert refused["status"] == 403
    assert "CsrfTokenMismatch" in refused["text"]
    # a page of another origin posting a form at the explorer (the session is signed in)
    target = f"{stub.server.explorer_url}api/tables"
    attack = (
        "<form id=f method=post enctype=text/plain action='" + target + "'>"
        '<input name=\'{"name":"Pwned","x":"\' value=\'"}\'></form>'
        "<script>document.getElementById('f').submit()</script>"
    )
    page.get("data:text/html;base64," + base64.b64encode(attack.encode()).decode())
    wait_for(page, lambda: "CrossSiteRequest" in page.page_source)
    assert "Pwned" not in table_api.tables()


def test_values_are_shown_as_text(page: Any, stub: ThreadedStubServer, table_api: TableApi) -> None:
    hostile = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    table_api.create_table("Hostile")
    table_api.insert("Hostile", {"PartitionKey": "<b>pk", "RowKey": "r", "Html": hostile})
    sign_in(page, stub)
    wait_for(page, lambda: shown(page, "tables-view"))
    open_table(page, "Hostile")
    wait_for(page, lambda: hostile in by_id(page, "entities-grid").text)
    assert page.execute_script("return window.__xss === undefined")
    assert page.find_elements(By.CSS_SELECTOR, "#entities-grid img") == []
    assert page.find_elements(By.CSS_SELECTOR, "#entities-grid b") == []
    open_entity(page, "<b>pk", "r")
    assert page.find_element(By.CSS_SELECTOR, "#props .p-value").get_attribute("value") == hostile
    assert page.execute_script("return window.__xss === undefined")


# --------------------------------------------------------------------------- accessibility

A11Y_CHECK = """
const problems = [];
const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
for (const e of document.querySelectorAll("input, select, textarea")) {
  if (!visible(e)) continue;
  const labelled = (e.id && document.querySelector(`label[for="${CSS.escape(e.id)}"]`))
    || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby") || e.closest("label");
  if (!labelled) problems.push("no label: " + (e.id || e.outerHTML.slice(0, 60)));
}
for (const e of document.querySelectorAll("button, a[href]")) {
  if (!visible(e)) continue;
  const name = (e.getAttribute("aria-label") || e.textContent || "").trim();
  if (!name) problems.push("no accessible name: " + e.outerHTML.slice(0, 60));
  if (e.tabIndex < 0) problems.push("not in the tab order: " + e.outerHTML.slice(0, 60));
}
for (const g of document.querySelectorAll("table")) {
  if (!visible(g)) continue;
  if (g.getAttribute("role") !== "grid" || !g.getAttribute("aria-label")) {
    problems.push("grid role/label: " + g.id);
  }
  for (const r of g.rows) {
    if (r.getAttribute("role") !== "row") problems.push("row role in " + g.id);
    for (const c of r.cells) {
      const want = c.tagName === "TH" ? "columnheader" : "gridcell";
      if (c.getAttribute("role") !== want) problems.push(want + " role in " + g.id);
    }
  }
}
return problems;
"""

FOCUSABLES = """
const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
return Array.from(document.querySelectorAll("button, a[href], input, select, textarea"))
  .filter((e) => visible(e) && !e.disabled);
"""


def tab_through(driver: Any) -> list[Any]:
    """Every element Tab reaches from the top of the page, once round, with its outline."""
    # start before the first element: a focused, untabbable marker at the top of the body
    driver.execute_script(
        "const m = document.createElement('span'); m.id = 'tab-start'; m.tabIndex = -1;"
        "document.body.prepend(m); m.focus();"
    )
    reached: list[Any] = []
    for _ in range(200):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        current = driver.switch_to.active_element
        if reached and current == reached[0]:
            break
        if current.tag_name == "body" or current in reached:
            if reached:
                break
            continue
        style = driver.execute_script(
            "const s = getComputedStyle(arguments[0]); return [s.outlineStyle, s.outlineWidth];",
            current,
        )
        where = current.get_attribute("outerHTML")[:80]
        assert style[0] != "none", f"no visible focus on {where}"
        assert style[1] != "0px", f"no visible focus on {where}"
        reached.append(current)
    driver.execute_script("document.getElementById('tab-start').remove()")
    return reached


@pytest.mark.parametrize("view", ["signin", "tables", "entities", "entity", "realism", "requests"])
def test_labels_roles_and_keyboard(
    browser: Any, stub: ThreadedStubServer, table_api: TableApi, view: str
) -> None:
    if view == "signin":
        browser.delete_all_cookies()
        browser.get(stub.server.explorer_url)
        wait_for(browser, lambda: shown(browser, "signin-view"))
    else:
        sign_in(browser, stub)
        wait_for(browser, lambda: shown(browser, "tables-view"))
        if "Keys" not in table_api.tables():
            table_api.create_table("Keys")
            table_api.insert("Keys", {"PartitionKey": "p", "RowKey": "r", "N": 1})
        if view in ("entities", "entity"):
            open_table(browser, "Keys")
            wait_rows(browser, ["r"])
        if view == "entity":
            open_entity(browser, "p", "r")
        if view in ("realism", "requests"):
            by_id(browser, f"nav-{view}").click()
            wait_for(browser, lambda: shown(browser, f"{view}-view"))
            wait_for(browser, lambda: by_id(browser, "faults").text or view == "requests")
    assert browser.execute_script(A11Y_CHECK) == []
    reached = tab_through(browser)
    expected = browser.execute_script(FOCUSABLES)
    missing = [e.get_attribute("outerHTML")[:80] for e in expected if e not in reached]
    assert missing == []


def test_enter_and_space_operate_controls(page: Any, table_api: TableApi) -> None:
    if "Keys" not in table_api.tables():
        table_api.create_table("Keys")
        table_api.insert("Keys", {"PartitionKey": "p", "RowKey": "r", "N": 1})
    by_id(page, "refresh-tables").click()
    idle(page, "tables-grid")
    press(page, "button[aria-label='Open table Keys']", Keys.ENTER)  # Enter on a button
    wait_for(page, lambda: by_id(page, "entities-title").text == "Table Keys")
    assert page.switch_to.active_element == by_id(page, "entities-title")  # focus moves there
    idle(page, "entities-grid")
    timestamp = "#column-choices input[type=checkbox]"  # the first column choice
    assert page.find_element(By.CSS_SELECTOR, timestamp).is_selected()
    press(page, timestamp, Keys.SPACE)  # Space on a checkbox
    wait_for(page, lambda: "Timestamp" not in by_id(page, "entities-grid").text)
    idle(page, "entities-grid")
    assert not page.find_element(By.CSS_SELECTOR, timestamp).is_selected()
    press(page, timestamp, Keys.SPACE)
    wait_for(page, lambda: "Timestamp" in by_id(page, "entities-grid").text)
    idle(page, "entities-grid")
    press(page, "button[aria-label='Open entity p / r']", Keys.SPACE)  # Space on a button
    wait_for(page, lambda: shown(page, "entity-view"))


# --------------------------------------------------------------------------- the stub


@contextlib.contextmanager
def rerendered(driver: Any) -> Iterator[None]:
    """Wait, after the block, until the realism view has been rendered again."""
    before = by_id(driver, "realism-view").get_attribute("data-renders")
    yield
    wait_for(driver, lambda: by_id(driver, "realism-view").get_attribute("data-renders") != before)


def test_realism_and_requests_live(
    page: Any, stub: ThreadedStubServer, table_api: TableApi
) -> None:
    by_id(page, "nav-realism").click()
    wait_for(page, lambda: by_id(page, "fault-spec").is_displayed())
    by_id(page, "fault-spec").send_keys("busy:next=1@table=Flaky")
    page.find_element(By.XPATH, "//button[text()='Add rule']").click()
    wait_for(
        page, lambda: "busy:next=1@table=flaky (seen 0, injected 0)" in by_id(page, "faults").text
    )
    injector = stub.server.config.faults
    assert injector is not None
    assert [r.describe() for r in injector.rules] == ["busy:next=1@table=flaky"]
    spec = by_id(page, "throttle-spec")
    spec.clear()
    spec.send_keys("partition=off,account=off,burst=2")
    with rerendered(page):
        page.find_element(By.XPATH, "//button[text()='Apply limits']").click()
    throttle = stub.server.config.throttle
    assert throttle is not None
    assert throttle.limits.burst == 2  # the stub's own setting changed
    assert by_id(page, "throttle-spec").get_attribute("value") == (
        "partition=off,account=off,burst=2,timeouts=0"
    )
    by_id(page, "range-bounds").send_keys("m,t")
    with rerendered(page):
        page.find_element(By.XPATH, "//button[text()='Apply layout']").click()
    layout = stub.server.config.partitions
    assert layout is not None
    assert layout.default.boundaries == ("m", "t")
    assert page.switch_to.active_element == by_id(page, "layout-apply")  # focus kept
    screenshot(page, "realism")
    layout.set_default(type(layout.default)())
    # a request through the Table API shows up in the requests view
    by_id(page, "nav-requests").click()
    wait_for(page, lambda: shown(page, "requests-view"))
    table_api.create_table("Flaky2")
    status, _, body = table_api.request("GET", "/Flaky()")
    wait_for(
        page, lambda: "/devstoreaccount1/Flaky()" in by_id(page, "requests-grid").text, timeout=5
    )
    text = by_id(page, "requests-grid").text
    assert "503" in text, (status, body, text)
    assert "ServerBusy" in text
    screenshot(page, "requests")
    by_id(page, "nav-realism").click()
    wait_for(page, lambda: "injected 1" in by_id(page, "faults").text)
    # live: a rule added elsewhere and a request it fails show up without a click
    injector.add("busy:next=1@table=Later")
    table_api.request("GET", "/Later()")
    later = "busy:next=1@table=later (seen 1, injected 1)"
    wait_for(page, lambda: later in by_id(page, "faults").text, timeout=6)
    assert "busy: 2" in by_id(page, "fault-counts").text
    page.find_element(By.XPATH, "//button[text()='Remove all rules']").click()
    wait_for(page, lambda: "No rules." in by_id(page, "faults").text)
