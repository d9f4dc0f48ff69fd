"""``since`` / ``until`` values (SPEC L13): ISO 8601 dates and date-times, or relative.

An ISO value without an offset is local time. A date alone means the start of that
day for ``since`` and its end for ``until`` (``until:2026-11-30`` includes the 30th).
Relative values count back from now: ``30m``, ``12h``, ``7d``, ``2w``, ``6mo``, ``1y``;
``today`` and ``yesterday`` name local days.
Results are epoch milliseconds. Pure: ``now`` is passed in.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from convodex.errors import QueryError

_RELATIVE = re.compile(r"^(\d+)\s*(m|min|h|d|w|mo|y)$", re.IGNORECASE)
_UNIT_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Months and years as calendar-free spans: 30 and 365 days.
_MONTH_SECONDS = 30 * 86400
# Days by name, as days back from today.
_NAMED_DAYS = {"today": 0, "yesterday": 1}
_YEAR_SECONDS = 365 * 86400


def parse_time(value: str, now_ms: int, *, name: str = "since", end_of_day: bool = False) -> int:
    """Epoch milliseconds of ``value``; a bad value raises ``QueryError`` naming ``name``
    (the value itself is user input and never echoed)."""
    text = value.strip()
    named = _NAMED_DAYS.get(text.lower())
    if named is not None:  # today / yesterday: local midnight, that day's end for until
        day = datetime.fromtimestamp(now_ms / 1000).date() - timedelta(days=named)
        text = day.isoformat()
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2).lower()
        if unit == "mo":
            seconds = amount * _MONTH_SECONDS
        elif unit == "y":
            seconds = amount * _YEAR_SECONDS
        else:
            seconds = amount * _UNIT_SECONDS[unit]
        return now_ms - seconds * 1000
    try:
        if len(text) == 10:  # a date alone: local midnight (or the day's end)
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day)
            if end_of_day:
                start += timedelta(days=1)
            return int(start.timestamp() * 1000) - (1 if end_of_day else 0)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(
            f"bad date in {name}: use YYYY-MM-DD, an ISO date-time, "
            "or a relative 30m, 12h, 7d, 2w, 6mo, 1y, today, yesterday"
        ) from None
    return int(moment.timestamp() * 1000)
