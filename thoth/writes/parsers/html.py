"""HTML: the page's main content (`<main>`, `<article>`, `role="main"`, else readability-lxml) as Markdown
(markdownify; a code block's language from its classes), then the Markdown parser's sections. The crawler and
a folder's `.html` files use this one converter."""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urljoin, urlsplit

from thoth.writes.parsers import ParsedDocument, ParseError, RawFile, markdown
from thoth.writes.parsers.unseen import drop_hidden_elements

_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|highlight-source|highlight)-([\w+#.-]+)$")
_DROPPED = ("script", "style", "nav", "header", "footer", "aside", "form", "svg", "button")  # not content
_MAIN = ("//main", "//article", "//*[@role='main']")
_MIN_MAIN_CHARS = 40  # a <main> with less text than this is a shell; let readability look instead


def _language(pre) -> str:  # noqa: ANN001 — a BeautifulSoup tag from markdownify
    """A code block's language from its (or its `<code>` child's, or its wrapper's) class names."""
    for element in (pre, pre.find("code"), pre.parent):
        if element is None:
            continue
        for name in element.get("class") or []:
            match = _LANGUAGE_CLASS.match(name)
            if match and match.group(1).lower() not in ("text", "plain", "none"):
                return match.group(1).lower()
    return ""


def _main_html(tree) -> str:  # noqa: ANN001 — an lxml element
    from lxml import html as lxml_html

    for xpath in _MAIN:
        found = tree.xpath(xpath)
        if found and len(found[0].text_content().strip()) >= _MIN_MAIN_CHARS:
            return lxml_html.tostring(found[0], encoding="unicode")
    from readability import Document as Readable

    return Readable(lxml_html.tostring(tree, encoding="unicode")).summary(html_partial=True)


def to_markdown(
    data: bytes | str, base_url: str | None = None, hidden: Counter | None = None
) -> tuple[str, str, str | None]:
    """(title, Markdown of the main content, canonical URL or None) of an HTML page; links made absolute against
    `base_url`, so a cited passage's links open wherever it is read; what no reader sees left out (`hidden`)."""
    from lxml import etree
    from lxml import html as lxml_html
    from markdownify import MarkdownConverter

    try:
        tree = lxml_html.document_fromstring(data)
    except (etree.ParserError, ValueError) as exc:
        raise ParseError(f"not an HTML page ({exc})") from None
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    canonical = next(iter(tree.xpath("//link[@rel='canonical']/@href")), None)
    drop_hidden_elements(tree, Counter() if hidden is None else hidden)
    for element in tree.xpath("|".join(f"//{name}" for name in _DROPPED)):
        if element.getparent() is not None:
            element.drop_tree()
    if base_url:
        tree.make_links_absolute(base_url, resolve_base_href=True, handle_failures="ignore")
        canonical = urljoin(base_url, canonical) if canonical else None
    converter = MarkdownConverter(heading_style="ATX", bullets="-", code_language_callback=_language)
    text = converter.convert(_main_html(tree))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if canonical and urlsplit(canonical).scheme not in ("http", "https"):
        canonical = None
    return title, text, canonical


def read(file: RawFile) -> ParsedDocument:
    return parse(file.data, file.title, file.base_url)


def parse(data: bytes, fallback_title: str, base_url: str | None = None) -> ParsedDocument:
    hidden: Counter[str] = Counter()
    title, text, canonical = to_markdown(data, base_url, hidden)
    if not text:
        raise ParseError("no text (the HTML page has no main content)")
    parsed = markdown.parse(text, fallback_title=title or fallback_title)
    parsed.hidden_dropped = dict(hidden + Counter(parsed.hidden_dropped))
    if title:  # the page's <title> names it, not its first heading (often the same, sometimes the site's)
        parsed.title = title
    parsed.url = canonical
    return parsed
