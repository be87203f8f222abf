"""Chunk text as the console shows it: Markdown rendered to safe HTML (tables, emphasis, code, lists).

markdown-it-py with raw HTML off is the sanitiser: every `<` in the text is escaped, never passed through,
and link targets are checked by its `validateLink` (no `javascript:`, `vbscript:`, `file:` or `data:`
links). Images are not rendered (their Markdown shows as text): a page of the console never fetches from
an address an ingested document names.
"""

from __future__ import annotations

import functools

from markupsafe import Markup


@functools.cache
def _parser():  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt  # imported with the first page that shows chunk text

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").disable("image")


def markdown(text: str | None) -> Markup:
    """`text` rendered as HTML that carries no markup of the text's own."""
    return Markup(_parser().render(text or ""))
