"""Time in questions: the words of a query that name a time, and the window they mean.

"what did Elise buy on 7 Jan 2024", "notes from last week", "since May", "the first week of
2024", "winter 2023", "two weeks ago": `read_query` finds the words (so they are not searched
as keywords: a date lives in when a memory was made, never in its words) and the window of
time they mean, in the user's local calendar, as UTC instants. `read_bound` reads a whole
`--since`/`--until` value the same way.

Which words name a time is decided here, by a small grammar that asks for a qualifier
where a word is also an ordinary one: `May` alone, `PR 2023`, `sunday roast`, `the 24/7
rota`, `spring boot` and `June's birthday` name no time; `since May`, `in 2023`, `on
Sunday` and `spring 2024` do. What a date expression means is read by dateparser (absolute
dates in their many spellings, weekdays, `N weeks ago`, `last month`), which is imported
only when such words are found (ADR 0009 compares it with the alternatives). Seasons
(northern, meteorological: winter 2023 = December 2023 to February 2024), holidays, quarters,
`the first week of …`, ranges, open ends and the lean towards the past (a memory is
about what happened: `on the 28th` asked on the 25th is last month's) are ours.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}  # fmt: skip
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
YEAR = r"(?:19|20)\d\d"
WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
SHORT_WEEKDAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?"
COUNT = (
    r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"(?:a )?couple of|(?:a )?few)"
)
UNIT = r"(?:day|week|fortnight|month|year)s?"
SEASON = r"(?:spring|summer|autumn|fall|winter)"
HOLIDAY = r"(?:christmas(?: eve| day)?|new year'?s(?: eve| day)?|easter|halloween)"

# One time expression, without a leading preposition (the longest alternatives first).
_ABSOLUTE = (
    rf"(?:(?:{WEEKDAY}|{SHORT_WEEKDAY}),? )?(?:the )?{DAY} (?:of )?{MONTH}(?:,? {YEAR})?"
    rf"|(?:(?:{WEEKDAY}|{SHORT_WEEKDAY}),? )?{MONTH} {DAY}(?:,? {YEAR})?(?![\d:.])"
    rf"|{YEAR}-\d\d?-\d\d?|{YEAR}/\d\d?/\d\d?|\d\d?[/.]\d\d?[/.](?:{YEAR}|\d\d)(?![\d/.])"
    rf"|{MONTH},? {YEAR}|q[1-4],? {YEAR}"
    rf"|(?:the )?(?:first|second|third|fourth|last) week of (?:{MONTH}(?: {YEAR})?|{YEAR})"
    rf"|the week of (?:the )?(?:{DAY} (?:of )?{MONTH}(?:,? {YEAR})?|{MONTH} {DAY}(?:,? {YEAR})?)"
    rf"|(?:the )?{SEASON} (?:of )?{YEAR}(?: ?[-–/] ?(?:{YEAR}|\d\d)(?!\d))?"
    rf"|(?:last|this|next) {SEASON}"
    rf"|(?:last|this|next) (?:{MONTH}|{HOLIDAY})|{HOLIDAY},? {YEAR}"
    rf"|{WEEKDAY},? (?:the )?{DAY}(?: of)? {MONTH}"
)
_RELATIVE = (
    r"the day (?:before yesterday|after tomorrow)|(?:earlier |later )?today|yesterday"
    r"|tomorrow|tonight|last night|this (?:morning|afternoon|evening)"
    rf"|{COUNT} {UNIT} ago|the (?:week|month|year) before last"
    rf"|(?:the )?(?:last|past|previous) {COUNT} {UNIT}"
    r"|(?:the )?(?:past|last) (?:week|fortnight|month|year)"
    r"|(?:last|this|next|previous) (?:week|weekend|fortnight|month|quarter|year)"
    rf"|(?:last|this|next) {WEEKDAY}"
)
# Needs a preposition before it: a bare month, year, weekday or `the 3rd` is often not a time.
_GUARDED = (
    rf"{MONTH}|{YEAR}|{WEEKDAY}|the {DAY}|the weekend|{HOLIDAY}|{SEASON}|\d\d?/\d\d?(?![\d/])"
)
_PREPOSITION = r"(?:on|in|during|at|from|since|before|after|until|till|by|of|over|around|for)"
_ONE = rf"(?:{_ABSOLUTE}|{_RELATIVE})"


@functools.cache
def _expression() -> re.Pattern:
    """The grammar of time words, compiled on first use (it takes 15–30 ms: a command that
    reads no date, or a hook, never pays for it)."""
    return re.compile(
        rf"\b(?:between (?P<a1>{_ONE}|{_GUARDED}) and (?P<b1>{_ONE}|{_GUARDED})"
        rf"|from (?P<a2>{_ONE}|{_GUARDED}|{DAY}) (?:to|until|till|through|-) "
        rf"(?P<b2>{_ONE}|{_GUARDED}|now|today)"
        rf"|(?P<op>since|after|before|until|till|from) (?P<x>{_ONE}|{_GUARDED})"
        rf"|(?:{_PREPOSITION} )?(?P<one>{_ONE})"
        rf"|{_PREPOSITION} (?P<g>{_GUARDED}))(?:'s)?(?![\w@.-]\w)",
        re.IGNORECASE,
    )


# Without one of these there is nothing to read (and dateparser is never imported).
_HINT = re.compile(
    rf"\d|\b(?:{MONTH}|{WEEKDAY}|{SEASON}|{HOLIDAY}|today|yesterday|tomorrow|tonight|ago|"
    r"week|weekend|month|quarter|year|fortnight|night|morning|afternoon|evening)\b",
    re.IGNORECASE,
)
_FUTURE = re.compile(r"\b(?:next|tomorrow|coming|upcoming|later|ahead|from now)\b", re.I)
_DANGLING = re.compile(
    r"\b(?:on|in|during|at|from|since|before|after|until|till|by|of|over|around|for|the)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Window:
    """A span of time as UTC instants: start inclusive, end exclusive; None is open."""

    start: datetime | None
    end: datetime | None
    text: str  # the words as typed ("on 16 June 2023")

    def contains(self, stamp: str) -> bool:
        """Whether an ISO UTC stamp (as Mnemo stores times) lies in the window."""
        moment = _instant(stamp)
        if moment is None:
            return False
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )

    @property
    def since(self) -> str | None:
        """The start as Mnemo stores times (ISO, UTC, microseconds), or None."""
        return None if self.start is None else self.start.isoformat(timespec="microseconds")

    @property
    def until(self) -> str | None:
        """The end (exclusive) as Mnemo stores times, or None."""
        return None if self.end is None else self.end.isoformat(timespec="microseconds")

    def widened(self, by: timedelta) -> Window:
        """The window with `by` more on each side (an open side stays open)."""
        return Window(
            self.start - by if self.start is not None else None,
            self.end + by if self.end is not None else None,
            self.text,
        )

    def describe(self) -> str:
        """The window in words for a notice: `16 June 2023`, `1 March 2024 – 31 March 2024`."""
        local = _local_days(self)
        if local is None:
            return self.text
        first, last = local
        if first is None:
            return f"before {_day(last + timedelta(days=1))}"
        if last is None:
            return f"since {_day(first)}"
        if first == last:
            return _day(first)
        return f"{_day(first)} – {_day(last)}"


def _instant(stamp: str) -> datetime | None:
    """An ISO stamp as an aware instant (UTC when it names no zone); None if unreadable."""
    try:
        moment = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class TimedQuery:
    """A query split into the time it names (if any) and the rest, to search for."""

    rest: str
    window: Window | None = None


_MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()


def _day(day: date) -> str:
    """`7 January 2024`, in English whatever the locale (strftime's %B follows it, and
    Windows' strftime has no %-d)."""
    return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"


def _local_days(window: Window) -> tuple[date | None, date | None] | None:
    # .astimezone() with no zone: the system's, with the offset of that instant
    first = window.start.astimezone().date() if window.start else None
    last = (window.end - timedelta(microseconds=1)).astimezone().date() if window.end else None
    return first, last


def _now(now: datetime | None) -> datetime:
    if now is None:
        moment = datetime.now().astimezone()
        return _Local.of(moment)
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


class _Local(datetime):
    """Now in the system's zone, marked so that each day's midnight is taken with that
    day's own offset (a fixed offset read in January put July's midnight an hour off)."""

    _mnemo_local = True

    @classmethod
    def of(cls, moment: datetime) -> _Local:
        return cls(*moment.timetuple()[:6], moment.microsecond, tzinfo=moment.tzinfo)


# ---- days to windows ------------------------------------------------------------------
def _month_start(day: date) -> date:
    return day.replace(day=1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _span(unit: str, day: date) -> tuple[date, date]:
    """The calendar `unit` (day, week, month, quarter, year) holding `day`: [first, next)."""
    if unit == "week":
        first = day - timedelta(days=day.weekday())
        return first, first + timedelta(days=7)
    if unit == "month":
        return _month_start(day), _add_months(day, 1)
    if unit == "quarter":
        first = date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
        return first, _add_months(first, 3)
    if unit == "year":
        return date(day.year, 1, 1), date(day.year + 1, 1, 1)
    return day, day + timedelta(days=1)


def _shift(unit: str, day: date, steps: int) -> date:
    if unit == "week":
        return day + timedelta(weeks=steps)
    if unit == "month":
        return _add_months(day, steps) + timedelta(days=min(day.day, 28) - 1)
    if unit == "quarter":
        return _add_months(day, 3 * steps)
    if unit == "year":
        try:
            return day.replace(year=day.year + steps)
        except ValueError:  # 29 February
            return day.replace(year=day.year + steps, day=28)
    return day + timedelta(days=steps)


def _easter(year: int) -> date:
    """Easter Sunday (the anonymous Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    el = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * el) // 451
    return date(year, (h + el - 7 * m + 114) // 31, (h + el - 7 * m + 114) % 31 + 1)


def _holiday(name: str, year: int) -> date:
    name = name.lower().replace("'", "").replace("’", "")
    if name.startswith("new years"):
        return date(year, 12, 31) if name.endswith("eve") else date(year, 1, 1)
    if name.startswith("christmas"):
        return date(year, 12, 24) if name.endswith("eve") else date(year, 12, 25)
    if name == "halloween":
        return date(year, 10, 31)
    return _easter(year)


# ---- one expression ----------------------------------------------------------------------
_PARSER = None


def _dateparser(text: str, today: datetime) -> tuple[date, str] | None:
    """(day, period) of an expression as dateparser reads it, leaning to the past."""
    global _PARSER
    from dateparser.date import DateDataParser  # ~70 ms, only when a date is asked

    base = today.replace(tzinfo=None)
    if _PARSER is None or _PARSER[0] != base:
        settings = {
            "PREFER_DATES_FROM": "past",
            "RELATIVE_BASE": base,
            "RETURN_TIME_AS_PERIOD": True,
            "PREFER_DAY_OF_MONTH": "first",
        }
        _PARSER = (base, DateDataParser(languages=["en"], settings=settings))
    data = _PARSER[1].get_date_data(text)
    if data is None or data.date_obj is None:
        return None
    period = data.period if data.period in ("day", "week", "month", "year", "quarter") else "day"
    return data.date_obj.date(), period


def _days(text: str, today: datetime, point: bool = False) -> tuple[date, date] | None:
    """[first, next) local days of one time expression (without its preposition); with
    `point`, `N units ago` is that day (a bound), not the week or month around it."""
    t = " ".join(text.lower().replace("’", "'").split())
    t = re.sub(r"'s$", "", t)
    day = today.date()
    future = bool(_FUTURE.search(t))
    if t in ("today", "earlier today", "later today", "tonight", "this morning",
             "this afternoon", "this evening"):  # fmt: skip
        return day, day + timedelta(days=1)
    if t in ("yesterday", "last night"):
        return day - timedelta(days=1), day
    if t == "tomorrow":
        return day + timedelta(days=1), day + timedelta(days=2)
    if t == "the day before yesterday":
        return day - timedelta(days=2), day - timedelta(days=1)
    if t == "the day after tomorrow":
        return day + timedelta(days=2), day + timedelta(days=3)
    if m := re.fullmatch(r"(\d\d?)\.(\d\d?)\.((?:19|20)?\d\d)", t):
        # Dots write the day first (10.01.2024 is 10 January), where slashes are ambiguous
        year = int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        try:
            first = date(year, int(m[2]), int(m[1]))
        except ValueError:
            return None
        return first, first + timedelta(days=1)
    if m := re.fullmatch(r"the (week|month|year) before last", t):
        return _span(m[1], _shift(m[1], day, -2))
    if m := re.fullmatch(r"(?:(last|this|next|previous) )?weekend|the weekend", t):
        saturday = day + timedelta(days=5 - day.weekday())
        if m[1] in (None, "last", "previous") and (saturday >= day or m[1]):
            saturday -= timedelta(weeks=1)
        if m[1] == "next":
            saturday += timedelta(weeks=1) if saturday < day else timedelta(0)
        return saturday, saturday + timedelta(days=2)
    if m := re.fullmatch(rf"(?:the )?(?:last|past|previous) ({COUNT}) ({UNIT})", t):
        n, unit = _count(m[1]), _unit(m[2])
        return _shift(unit, day, -n * (2 if m[2].startswith("fortnight") else 1)), day + timedelta(
            1
        )
    if m := re.fullmatch(
        r"the (?:past|last) (week|fortnight|month|year)|past (week|fortnight|month|year)", t
    ):
        word = m[1] or m[2]
        steps = 2 if word == "fortnight" else 1
        return _shift(_unit(word), day, -steps), day + timedelta(days=1)
    if m := re.fullmatch(r"(last|this|next|previous) (week|fortnight|month|quarter|year)", t):
        unit = _unit(m[2])
        steps = {"last": -1, "previous": -1, "this": 0, "next": 1}[m[1]]
        if m[2] == "fortnight":
            return day - timedelta(days=14), day + timedelta(days=1)
        return _span(unit, _shift(unit, day, steps))
    if m := re.fullmatch(rf"({COUNT}) ({UNIT}) ago", t):
        unit, n = _unit(m[2]), _count(m[1]) * (2 if m[2].startswith("fortnight") else 1)
        moment = _shift(unit, day, -n)
        if point:
            return moment, moment + timedelta(days=1)
        return _span(unit, moment)  # `two weeks ago`: that week
    if m := re.fullmatch(rf"(last|this|next|on)? ?({WEEKDAY})", t):
        back = (day.weekday() - _WEEKDAYS.index(m[2])) % 7
        target = day - timedelta(days=back)
        if m[1] == "last" and back == 0:
            target -= timedelta(weeks=1)
        if m[1] == "next":
            target += timedelta(weeks=1)
        return target, target + timedelta(days=1)
    if m := re.fullmatch(rf"(?:the )?({SEASON}) (?:of )?({YEAR})(?: ?[-–/] ?(?:{YEAR}|\d\d))?", t):
        return _season(m[1], int(m[2]))
    if m := re.fullmatch(rf"(last|this|next) ({SEASON})", t):
        # last: the latest that has ended; this: this year's; next: the first to start
        seasons = [_season(m[2], year) for year in range(day.year - 2, day.year + 2)]
        if m[1] == "last":
            return [s for s in seasons if s[1] <= day][-1]
        if m[1] == "next":
            return next(s for s in seasons if s[0] > day)
        return _season(m[2], day.year)
    if m := re.fullmatch(rf"(?:(last|this|next) )?({HOLIDAY}),?(?: ({YEAR}))?", t):
        year = int(m[3]) if m[3] else day.year
        when = _holiday(m[2], year)
        if not m[3]:
            if m[1] == "next" or (m[1] is None and future):
                if when <= day:
                    when = _holiday(m[2], year + 1)
            elif when > day or (m[1] == "last" and when == day):
                when = _holiday(m[2], year - 1)
        return when, when + timedelta(days=1)
    if m := re.fullmatch(rf"q([1-4]),? ({YEAR})", t):
        first = date(int(m[2]), 3 * int(m[1]) - 2, 1)
        return first, _add_months(first, 3)
    if m := re.fullmatch(
        rf"(?:the )?(first|second|third|fourth|last) week of (?:({MONTH})(?: ({YEAR}))?|({YEAR}))",
        t,
    ):
        if m[4]:
            first_day, end = date(int(m[4]), 1, 1), date(int(m[4]) + 1, 1, 1)
        else:
            month = _MONTHS[m[2][:3]]
            year = int(m[3]) if m[3] else day.year
            first_day = date(year, month, 1)
            if not m[3] and first_day > day:
                first_day = date(year - 1, month, 1)
            end = _add_months(first_day, 1)
        if m[1] == "last":
            return end - timedelta(days=7), end
        start = first_day + timedelta(weeks=("first", "second", "third", "fourth").index(m[1]))
        return start, start + timedelta(days=7)
    if m := re.fullmatch(r"the week of (?:the )?(.+)", t):
        found = _days(m[1], today)
        return None if found is None else _span("week", found[0])
    if m := re.fullmatch(rf"(last|this|next) ({MONTH})", t):
        month = _MONTHS[m[2][:3]]
        year = day.year
        if m[1] == "last" and month >= day.month:
            year -= 1
        if m[1] == "next" and month <= day.month:
            year += 1
        return _span("month", date(year, month, 1))
    if m := re.fullmatch(rf"({MONTH})", t):  # a bare month after a preposition
        month = _MONTHS[m[1][:3]]
        year = day.year if month <= day.month or future else day.year - 1
        return _span("month", date(year, month, 1))
    if m := re.fullmatch(rf"({YEAR})", t):
        return _span("year", date(int(m[1]), 1, 1))
    if m := re.fullmatch(rf"the ({DAY})", t):
        number = int(re.sub(r"\D", "", m[1]))
        month = _month_start(day)
        for _ in range(3):  # the latest month that has that day, not after today
            try:
                target = month.replace(day=number)
            except ValueError:
                target = None
            if target is not None and (target <= day or future):
                return target, target + timedelta(days=1)
            month = _add_months(month, -1)
        return None
    read = _dateparser(t, today)
    if read is None:
        return None
    found, period = read
    first, end = _span(period, found)
    explicit_year = re.search(YEAR, t) is not None
    if first > day and not future and not explicit_year:
        back = {"day": "year", "month": "year", "week": "week"}.get(period, period)
        first, end = _span(period, _shift(back, found, -1))
    return first, end


def _season(name: str, year: int) -> tuple[date, date]:
    month = _SEASON_START[name.lower()]
    first = date(year, month, 1)
    return first, _add_months(first, 3)


def _count(word: str) -> int:
    word = word.strip()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _unit(word: str) -> str:
    word = word.rstrip("s")
    return "week" if word == "fortnight" else word


def _window(first: date | None, end: date | None, text: str, now: datetime) -> Window:
    local = getattr(now, "_mnemo_local", False)

    def instant(day: date | None) -> datetime | None:
        if day is None:
            return None
        if local:  # midnight as the system's zone has it that day (summer time included)
            return datetime.combine(day, time()).astimezone().astimezone(UTC)
        return datetime.combine(day, time(), tzinfo=now.tzinfo).astimezone(UTC)

    return Window(instant(first), instant(end), text)


def _read(match: re.Match, now: datetime, point: bool = False) -> Window | None:
    """The window of one matched expression, or None when its words name no day."""
    text = match.group(0)
    if match["a1"] or match["a2"]:
        a, b = (match["a1"], match["b1"]) if match["a1"] else (match["a2"], match["b2"])
        until = _days(b, now) if b.lower() not in ("now", "today") else None
        if until is None and b.lower() not in ("now", "today"):
            return None
        if re.fullmatch(DAY, a.strip(), re.I) and until is not None:  # from 1 to 15 March
            try:
                since = (until[0].replace(day=int(re.sub(r"\D", "", a))), None)
            except ValueError:
                return None
        elif until is not None and not re.search(YEAR, a) and re.search(YEAR, b):
            # `between May and July 2024`: the start is read in the end's year
            ref = datetime.combine(until[1] - timedelta(days=1), time(12), tzinfo=now.tzinfo)
            since = _days(a, ref)
        else:
            since = _days(a, now)
        if since is None:
            return None
        end = until[1] if until is not None else None
        if end is not None and end <= since[0]:
            return None
        return _window(since[0], end, text, now)
    if match["op"]:
        days = _days(match["x"], now)
        if days is None:
            return None
        op = match["op"].lower()
        if op == "since":
            return _window(days[0], None, text, now)
        if op == "after":
            return _window(days[1], None, text, now)
        if op == "before":
            return _window(None, days[0], text, now)
        if op in ("until", "till"):
            return _window(None, days[1], text, now)
        return _window(days[0], days[1], text, now)  # `from March 2024` is March
    words = match["one"] or match["g"]
    days = _days(words, now, point)
    return None if days is None else _window(days[0], days[1], text, now)


def _rest(query: str, match: re.Match) -> str:
    """The query without the time words matched (and a preposition left dangling)."""
    before = _DANGLING.sub("", query[: match.start()]).rstrip(" ,")
    after = query[match.end() :].lstrip(" ,")
    return " ".join(f"{before} {after}".split())


def read_query(query: str, now: datetime | None = None) -> TimedQuery:
    """The first time expression of a query and the rest of it (the time words and any
    preposition left dangling removed)."""
    if not _HINT.search(query):
        return TimedQuery(rest=query)
    moment = _now(now)
    for match in _expression().finditer(query):
        window = _read(match, moment)
        if window is None:
            continue
        return TimedQuery(rest=_rest(query, match), window=window)
    return TimedQuery(rest=query)


_ENDS = re.compile(
    r"\b(?:(?:our|my|your)\s+(?P<end>first|last|latest|most recent|previous|earliest)\s+"
    r"(?:conversation|chat|session|talk|discussion|exchange)s?"
    r"|the\s+(?P<the>first|last|latest|most recent|previous|earliest)\s+"
    r"(?:conversation|chat)s?"
    r"|the\s+(?P<time>first|last)\s+time\s+(?:we|you)\s+(?:talked|spoke|chatted))\b"
    r"(?!\s+(?:of|on|in|with|from|to|for|at|token|export|file|id)\b)",
    re.I,
)


def read_ends(query: str) -> tuple[str, str, str] | None:
    """A query naming the first or the last conversation ("what did we talk about in our
    first conversation", "the last time we talked"): ('first' or 'last', the words, the
    rest of the query); None otherwise. Which day that is depends on what is stored."""
    match = _ENDS.search(query)
    if match is None:
        return None
    end = (match.group("end") or match.group("the") or match.group("time")).lower()
    end = "first" if end in ("first", "earliest") else "last"
    return end, match.group(0), _rest(query, match)


def day_of(stamp: str, text: str, now: datetime | None = None) -> Window | None:
    """The day holding an ISO stamp (in `now`'s zone, the system's by default), as a window
    named by `text`."""
    moment = _instant(stamp)
    if moment is None:
        return None
    today = _now(now)
    local = getattr(today, "_mnemo_local", False)
    day = (moment.astimezone() if local else moment.astimezone(today.tzinfo)).date()
    return _window(day, day + timedelta(days=1), text, today)


def read_bound(value: str, now: datetime | None = None, end: bool = False) -> str | None:
    """A whole `--since` (or, with `end`, `--until`) value in words as an ISO UTC stamp:
    the start of its window (`--since "last week"`: last Monday) or its exclusive end
    (`--until 2024`: 1 January 2025); None when the value is not a time in words."""
    moment = _now(now)
    text = " ".join(value.split())
    if not text or not _HINT.search(text):
        return None
    match = _expression().fullmatch(text)
    if match is None:
        match = _expression().fullmatch(f"on {text}")
    if match is None:
        return None
    window = _read(match, moment, point=True)
    if window is None:
        return None
    return window.until if end else window.since
