"""The console in a real browser: headless Chromium (Debian `chromium` + `chromium-driver`) driven by
selenium against a real server on a loopback port, checking what is on the screen.

Skipped, with a line in the test summary, where Chromium or its driver is missing (`.ci/run` installs
them). `THOTH_SCREENSHOTS=docs/img` (or `make screenshots`) writes the screenshots docs/console.md shows.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LiveServer

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = [name for name, found in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not found]
try:
    import selenium  # noqa: F401
except ImportError:
    MISSING.append("selenium (pip install -e '.[dev]')")

SKIP_REASON = (
    f"browser tests skipped: {', '.join(MISSING)} not found "
    "(apt-get install -y chromium chromium-driver; .ci/run does it)"
)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=SKIP_REASON)

DESKTOP = (1100, 860)
PHONE = (390, 844)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={DESKTOP[0]},{DESKTOP[1]}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("THOTH_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(browser, folder: Path, name: str) -> Path:
    """A PNG of the viewport, reduced to a small palette (docs keep them small)."""
    path = folder / f"console-{name}.png"
    browser.save_screenshot(str(path))
    try:
        from PIL import Image
    except ImportError:
        return path
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=32).save(path, optimize=True)
    return path


def visible_text(browser) -> str:
    """The words on screen: `innerText` leaves out what CSS hides and what sits in closed <details>."""
    return " ".join(browser.find_element("tag name", "main").text.split())


def follow(browser, element) -> None:
    """Click a link or a submit button and wait for the next page: on a loaded machine a click returns
    before the browser has navigated."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = browser.find_element("tag name", "html")
    element.click()
    wait = WebDriverWait(browser, 60)
    try:
        wait.until(expected_conditions.staleness_of(old))
    except TimeoutException:
        # a click Chromium dropped under heavy load (the page never left): click once more, from the page
        browser.execute_script("arguments[0].click()", element)
        wait.until(expected_conditions.staleness_of(old))
    # the old page is gone; the new one may still be parsing (a list read now can come back short)
    wait.until(lambda b: b.execute_script("return document.readyState") == "complete")


def in_viewport(browser, element) -> bool:
    return browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.bottom > 0 && r.top < window.innerHeight && r.right > 0 && r.left < window.innerWidth;",
        element,
    )


def fits_width(browser) -> bool:
    """Nothing runs off the side: the page needs no horizontal scrolling."""
    return browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1;")


@pytest.fixture(autouse=True)
def desktop(browser) -> None:
    browser.set_window_size(*DESKTOP)


def test_collections_then_the_failed_files_of_one(browser, console_server: LiveServer, shots: Path) -> None:
    browser.get(f"{console_server.url}/ui")
    assert browser.current_url == f"{console_server.url}/ui/"
    words = visible_text(browser)
    assert "Collections" in words and "handbook" in words and "topics" in words
    assert "2 failed" in words and "none failed" in words
    screenshot(browser, shots, "collections")
    follow(browser, browser.find_element("link text", "2 failed"))
    assert browser.current_url.endswith("/ui/collections/handbook?status=failed")
    words = visible_text(browser)
    assert "2 files with status failed" in words
    assert "reports/broken.pdf [failed]" in words  # the status is a word, not only a colour
    assert "What to do: The file is damaged." in words and "What to do: The file is empty." in words
    screenshot(browser, shots, "failed")


def test_sort_a_collection_with_the_form(browser, console_server: LiveServer) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(f"{console_server.url}/ui/collections/handbook")
    Select(browser.find_element("name", "order")).select_by_visible_text("descending")
    follow(browser, browser.find_element("css selector", "form.controls button"))
    assert "order=desc" in browser.current_url
    # read in one script, not element by element: a late repaint of the page can detach the nodes of a
    # list read one at a time ("Node with given id does not belong to the document", once on a loaded run)
    texts = browser.execute_script("return [...document.querySelectorAll('li.file')].map(e => e.innerText)")
    keys = [t.split(" [")[0].splitlines()[0] for t in texts]
    assert keys == sorted(keys, reverse=True) and len(keys) == 7


def test_search_then_follow_a_citation(browser, console_server: LiveServer, shots: Path) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(f"{console_server.url}/ui/search")
    box = browser.find_element("name", "q")
    box.send_keys("forklift operators hired in March")
    Select(browser.find_element("name", "mode")).select_by_visible_text("hybrid")
    Select(browser.find_element("name", "collection")).select_by_visible_text("handbook")
    follow(browser, browser.find_element("css selector", "form.search button"))
    assert "mode=hybrid" in browser.current_url and "collection=handbook" in browser.current_url
    first = browser.find_element("css selector", "li.hit")
    ranks = first.find_element("css selector", "table.ranks").text.split()
    assert ranks[:6] == ["Keyword", "rank", "Vector", "rank", "Fused", "score"]
    assert ranks[6] == "1" and ranks[7].isdigit() and 0 < float(ranks[8]) <= 1
    assert "Quarterly Report" in first.text
    screenshot(browser, shots, "search")

    follow(browser, first.find_element("css selector", "a.citation"))
    assert "/ui/documents/" in browser.current_url and "#chunk-" in browser.current_url
    cited = browser.find_element("css selector", "li.chunk.cited")
    assert cited.is_displayed() and in_viewport(browser, cited)
    assert "The cited passage" in cited.text and "forklift operators" in cited.text
    # the passage on its page: a PNG of the page, the passage highlighted (thoth/retrieval/page_images.py)
    picture = cited.find_element("css selector", "figure.on-page img")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda b: b.execute_script("return arguments[0].complete", picture))
    assert browser.execute_script("return arguments[0].naturalWidth", picture) > 500  # the page, not a broken image
    words = visible_text(browser)
    assert "Quarterly Report" in words and "Ada Lovelace" in words
    browser.find_element("css selector", "details.bibtex summary").click()
    assert "@" in browser.find_element("css selector", "details.bibtex pre").text
    browser.execute_script("window.scrollTo(0, 0)")
    screenshot(browser, shots, "document")


def test_from_a_hit_to_its_path_in_the_tree(browser, console_server: LiveServer, shots: Path) -> None:
    browser.get(f"{console_server.url}/ui/search?q=queen+bees+in+the+hive&mode=keyword&collection=topics")
    follow(browser, browser.find_element("css selector", "li.hit a.tree-path"))
    path = browser.find_element("css selector", "nav.path").text
    assert "Path to the root" in path and "level 0: this node" in path
    levels = [line.split(":")[0] for line in path.splitlines()[1:]]
    assert levels[0].startswith("level ") and int(levels[0].split()[1]) >= 1 and levels[-1] == "level 0"
    assert "Leaf count 1 chunk" in visible_text(browser)
    follow(browser, browser.find_element("css selector", "nav.path a"))  # up to the top of the tree
    words = visible_text(browser)
    assert "Summary node" in words and "Children (" in words


def test_open_a_tree_level_and_a_node(browser, console_server: LiveServer, shots: Path) -> None:
    browser.get(f"{console_server.url}/ui/trees/topics")
    words = visible_text(browser)
    assert "Tree of topics" in words and "(top)" in words and "Level 0 (" in words
    screenshot(browser, shots, "tree")
    follow(browser, browser.find_element("css selector", "a.node-link"))
    words = visible_text(browser)
    assert "Summary node" in words and "Leaf count" in words and "Children (" in words
    child = browser.find_element("css selector", "ol.nodes a.node-link")
    screenshot(browser, shots, "node")
    follow(browser, child)
    assert "this node" in browser.find_element("css selector", "nav.path").text


def test_workshop_steps_and_their_learning_context(browser, console_server: LiveServer, shots: Path) -> None:
    browser.get(f"{console_server.url}/ui/workshops/caching-fundamentals")
    words = visible_text(browser)
    assert "Exercise 1" in words and "changed" in words
    screenshot(browser, shots, "workshop")
    follow(browser, browser.find_element("link text", "retrieve_learning_context"))
    context = browser.find_element("id", "context")
    assert in_viewport(browser, context)
    assert "retrieve_learning_context: exercise 1, step 1" in context.text


@pytest.mark.parametrize("path", ["/ui/", "/ui/collections/handbook?status=failed", "/ui/search?q=time+off",
                                  "/ui/trees/topics", "/ui/workshops/caching-fundamentals"])  # fmt: skip
def test_pages_fit_a_phone_screen(browser, console_server: LiveServer, shots: Path, path: str) -> None:
    browser.set_window_size(*PHONE)
    browser.get(f"{console_server.url}{path}")
    assert fits_width(browser), f"{path} scrolls sideways at {PHONE[0]} px"
    nav = browser.find_element("css selector", "header nav")
    assert nav.is_displayed() and in_viewport(browser, nav)
    if path.startswith("/ui/search"):
        screenshot(browser, shots, "phone-search")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_collection_cards_lay_out_cleanly(browser, console_server: LiveServer, shots: Path, size) -> None:
    browser.set_window_size(*size)
    browser.get(f"{console_server.url}/ui/")
    assert fits_width(browser), f"the collections scroll sideways at {size[0]} px"
    cards = browser.execute_script(
        "return [...document.querySelectorAll('section.card')].map(card => {"
        "  const model = card.querySelector('dd.model'), box = card.getBoundingClientRect();"
        "  const text = document.createRange(); text.selectNodeContents(model);"  # one rect per line of text
        "  return {right: box.right, lines: text.getClientRects().length, title: model.title,"
        "          whole: model.scrollWidth <= model.clientWidth,"
        "          times: [...card.querySelectorAll('time')].map(t => [t.innerText, t.title])};"
        "})"
    )
    assert len(cards) == 3
    for card in cards:
        assert card["right"] <= size[0] and card["lines"] == 1, card  # the model name on one line
        assert card["title"].endswith("all-MiniLM-L6-v2") and card["whole"]  # the full name on hover, not cut
        for text, exact in card["times"]:  # a date as people read it, the exact time on hover
            assert text in ("just now",) or text.endswith("ago"), text
            assert exact.endswith(" UTC") and len(exact) == len("2026-01-01 00:00:00 UTC")
    words = visible_text(browser)
    assert "Last run: 5 added, 0 updated, 0 removed, 2 failed." in words
    screenshot(browser, shots, "collections" if size == DESKTOP else "phone-collections")


def test_chunk_markdown_is_rendered(browser, console_server: LiveServer) -> None:
    browser.get(f"{console_server.url}/ui/search?q=deployments+Tuesday+owner&mode=keyword&collection=handbook")
    first = browser.find_element("css selector", "li.hit")
    assert "Deploying" in first.text and "|" not in first.text  # the table, not its pipes
    follow(browser, first.find_element("css selector", "a.citation"))
    table = browser.find_element("css selector", "li.chunk .markdown table")
    assert [th.text for th in table.find_elements("tag name", "th")] == ["step", "owner"]
    assert [td.text for td in table.find_elements("tag name", "td")] == ["build", "CI", "deploy", "on-call"]
    assert "|------|" not in visible_text(browser)


def test_the_search_page_explains_its_ranking(browser, console_server: LiveServer, shots: Path) -> None:
    from thoth.retrieval.search import DEFAULT_RANKING

    browser.get(f"{console_server.url}/ui/search?q=time+off&mode=hybrid")
    explain = browser.find_element("css selector", "p.explain").text
    weight = DEFAULT_RANKING.vector_weight
    assert f"weights vector {weight:g}, keyword {1 - weight:g}" in explain and "Convex fusion" in explain
    browser.get(f"{console_server.url}/ui/search?q=time+off&mode=keyword")
    assert "Keyword search only (alpha 0)" in browser.find_element("css selector", "p.explain").text
