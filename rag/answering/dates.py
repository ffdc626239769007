"""Dates read from a question: "last 6 months", "in March 2024", "since Monday", "2027".

``parse_dates`` turns the first date phrase of a question into a range relative to today; the
query analysis (``rag.answering.analysis``) makes a filter or a boost of it.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS.pop("may", None)
MONTHS["may"] = 5
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}

MONTH_RE = "|".join(sorted((m for m in MONTHS), key=len, reverse=True))
WEEKDAY_RE = "|".join(WEEKDAYS)
_NUM_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3,
}  # fmt: skip
_NUM_RE = r"\d{1,3}|" + "|".join(sorted(_NUM_WORDS, key=len, reverse=True))


def _month_range(year: int, month: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


def _shift_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _number(text: str) -> int:
    text = text.lower().strip()
    return int(text) if text.isdigit() else _NUM_WORDS.get(text, 1)


def _period(expr: str, today: dt.date) -> tuple[dt.date, dt.date] | None:
    """The dates one expression names: a weekday, a month (with or without year), a year, a day."""
    expr = expr.strip().lower().rstrip("?.!,")
    if expr == "today":
        return today, today
    if expr == "yesterday":
        day = today - dt.timedelta(days=1)
        return day, day
    if m := re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", expr):
        try:
            day = dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return None
        return day, day
    if m := re.fullmatch(r"(\d{4})-(\d{1,2})", expr):
        if 1 <= int(m[2]) <= 12:
            return _month_range(int(m[1]), int(m[2]))
        return None
    if expr in WEEKDAYS:
        back = (today.weekday() - WEEKDAYS[expr]) % 7
        day = today - dt.timedelta(days=back)
        return day, day
    if m := re.fullmatch(
        rf"(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+)?({MONTH_RE})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?,?(?:\s+(\d{{4}}))?",
        expr,
    ):
        month = MONTHS[m[2]]
        day_of_month = m[1] or m[3]
        # Without a year, the most recent such month: "in March" asked in February is last March.
        recent = today.year if month <= today.month else today.year - 1
        year = int(m[4]) if m[4] else recent
        if day_of_month:
            try:
                day = dt.date(year, month, int(day_of_month))
            except ValueError:
                return None
            return day, day
        return _month_range(year, month)
    if m := re.fullmatch(r"(\d{4})", expr):
        year = int(m[1])
        if 1900 <= year <= 2200:
            return dt.date(year, 1, 1), dt.date(year, 12, 31)
    return None


_EXPR = (
    rf"(?:today|yesterday|\d{{4}}-\d{{1,2}}(?:-\d{{1,2}})?|{WEEKDAY_RE}"
    rf"|(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{MONTH_RE})\.?(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?,?(?:\s+\d{{4}})?|\d{{4}})"
)


def parse_dates(text: str, today: dt.date) -> tuple[dt.date | None, dt.date | None, str]:
    """A date range from phrases such as "last 6 months", "in March 2024", "since Monday".

    Returns ``(date_from, date_to, phrase)``; open ends are None. Relative to ``today``.
    """
    low = text.lower()
    for phrase in _DATE_PHRASES:  # the first kind of phrase that yields a range wins
        found = phrase(low, today)
        if found:
            return found
    return None, None, ""


_DateRange = tuple[dt.date | None, dt.date | None, str]


def _found(match, start, end) -> _DateRange:
    return start, end, match.group(0).strip()


def _between(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(rf"\bbetween\s+({_EXPR})\s+and\s+({_EXPR})\b", low) or re.search(
        rf"\bfrom\s+({_EXPR})\s+(?:to|until|till|through)\s+({_EXPR})\b", low
    ):
        a, b = _period(m[1], today), _period(m[2], today)
        if a and b:
            return _found(m, min(a[0], b[0]), max(a[1], b[1]))
    return None


def _hours_back(n: int, today: dt.date) -> dt.date:
    """The first day "the last n hours" may reach: documents carry a day, not a time, so yesterday
    is in it for any n (two hours ago may be before midnight)."""
    return today - dt.timedelta(days=max(1, math.ceil(n / 24)))


def _last_n_units(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(
        rf"\b(?:in\s+)?(?:the\s+)?(?:last|past|previous)\s+({_NUM_RE})\s+(hour|day|week|month|year)s?\b", low
    ):
        n, unit = _number(m[1]), m[2]
        return _found(m, _back(n, unit, today), today)
    return None


def _back(n: int, unit: str, today: dt.date) -> dt.date:
    """The first day of the last ``n`` units up to ``today``."""
    if unit == "hour":
        return _hours_back(n, today)
    if unit in ("month", "year"):
        return _shift_months(today, n * (12 if unit == "year" else 1))
    return today - dt.timedelta(days=n * UNITS[unit])


def _the_last_unit(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(
        r"\b(?:in\s+)?the\s+(?:last|past)\s+(hour|day|week|month|year)\b|\bpast\s+(hour|day|week|month|year)\b",
        low,
    ):
        return _found(m, _back(1, m[1] or m[2], today), today)
    return None


def _ago(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(rf"\b({_NUM_RE})\s+(hour|day|week|month|year)s?\s+ago\b", low):
        n, unit = _number(m[1]), m[2]
        start = _back(n, unit, today)
        if unit == "hour":  # "3 hours ago" may be yesterday or today; "48 hours ago" is one day
            end = start if n >= 24 else today
        elif unit in ("month", "year"):
            end = _shift_months(start, -1 if unit == "month" else -12) - dt.timedelta(days=1)
        else:
            end = start + dt.timedelta(days=UNITS[unit] - 1)
        return _found(m, start, min(end, today))
    return None


def _this_or_last_unit(low: str, today: dt.date) -> _DateRange | None:
    m = re.search(r"\b(this|last)\s+(week|month|year)\b", low)
    if not m:
        return None
    which, unit = m[1], m[2]
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday())
        return (
            _found(m, monday, today)
            if which == "this"
            else _found(m, monday - dt.timedelta(days=7), monday - dt.timedelta(days=1))
        )
    if unit == "month":
        if which == "this":
            return _found(m, today.replace(day=1), today)
        first = _shift_months(today.replace(day=1), 1)
        return _found(m, *_month_range(first.year, first.month))
    if which == "this":
        return _found(m, dt.date(today.year, 1, 1), today)
    return _found(m, dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31))


def _since(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(rf"\b(?:since|after)\s+(?:last\s+)?({_EXPR})\b", low):
        period = _period(m[1], today)
        if period:
            is_after = m.group(0).startswith("after")
            start = period[1] + dt.timedelta(days=1) if is_after else period[0]
            if "last " in m.group(0) and m[1] in WEEKDAYS and period[0] == today:
                start = today - dt.timedelta(days=7)
            return _found(m, start, today)
    return None


def _before(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(rf"\bbefore\s+({_EXPR})\b", low):
        period = _period(m[1], today)
        if period:
            return _found(m, None, period[0] - dt.timedelta(days=1))
    return None


def _in_period(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(rf"\b(?:in|during|on|for|from)\s+({_EXPR})\b", low):
        period = _period(m[1], today)
        if period and not (m[1] in WEEKDAYS and "on" not in m.group(0)):
            return _found(m, *period)
    return None


def _named_day(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(r"\b(today|yesterday)\b", low):
        return _found(m, *_period(m[1], today))
    if m := re.search(r"\b(\d{4}-\d{2}-\d{2})\b", low):
        period = _period(m[1], today)
        if period:
            return _found(m, *period)
    return None


def _recently(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(r"\b(?:recently|lately)\b", low):
        return _found(m, _shift_months(today, 3), today)
    return None


def _next_unit(low: str, today: dt.date) -> _DateRange | None:
    if m := re.search(r"\b(?:the\s+)?next\s+(week|month|year)\b", low):
        unit = m[1]
        if unit == "week":
            monday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(days=7)
            return _found(m, monday, monday + dt.timedelta(days=6))
        if unit == "month":
            first = _shift_months(today.replace(day=1), -1)
            return _found(m, *_month_range(first.year, first.month))
        return _found(m, dt.date(today.year + 1, 1, 1), dt.date(today.year + 1, 12, 31))
    return None


_DATE_PHRASES = (
    _between,
    _last_n_units,
    _the_last_unit,
    _ago,
    _this_or_last_unit,
    _since,
    _before,
    _in_period,
    _named_day,
    _recently,
    _next_unit,
)

# "the last meeting", "our latest call": the day of the newest meeting the person can see, not a
# period counted back from today. "Our last meeting with Acme" is the newest of some meetings,
# which the name finds.
LATEST_MEETING_RE = re.compile(
    r"\b(?:(?:the|our|my)\s+)?(?:last|latest|most\s+recent|previous|newest)\s+"
    r"(?:meeting|call|sync|standup|stand-up|1:1|one-on-one|catch-up|check-in)\b"
    r"(?!\s+(?:with|about|on|for|between|of)\b)",
    re.I,
)
