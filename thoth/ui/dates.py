"""Dates as people read them ("3 hours ago", "12 Mar 2026"), the exact time on hover: the console's `when`."""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup, escape

RELATIVE_DAYS = 7  # within a week "3 days ago" reads best; beyond it, the date itself


def _parse(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def human(at: datetime, now: datetime) -> str:
    seconds = (now - at).total_seconds()
    if seconds < 0 or seconds >= RELATIVE_DAYS * 86400:
        return f"{at.day} {at:%b %Y}"
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def when(value: datetime | str | None, missing: str = "never") -> Markup:
    """A <time> element: the date as people read it, its exact UTC time in `title` and `datetime`."""
    at = _parse(value)
    if at is None:
        return Markup(escape(value or missing))
    at = at.astimezone(UTC)
    exact = f"{at:%Y-%m-%d %H:%M:%S} UTC"
    text = human(at, datetime.now(UTC))
    return Markup(f'<time datetime="{at.isoformat()}" title="{exact}">{escape(text)}</time>')
