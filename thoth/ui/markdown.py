"""Chunk text as the console shows it: Markdown rendered to safe HTML. Raw HTML is off (every `<` escaped),
unsafe link schemes are refused, and images are not rendered: a page never fetches from an address a
document names."""

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
