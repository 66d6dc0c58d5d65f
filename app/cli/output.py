"""How the CLI prints: results, single memories, progress, and notices on stderr."""

from __future__ import annotations

import sys

from app.core import origin, superseding
from app.core.display import age, snippet, visible, written_by
from app.core.memory import Memory
from app.core.search.ranking import MAX_STD, Band, band_of
from app.core.search.recall import RecallResult


def shown(text: object) -> str:
    """Text from elsewhere (a space's folder: other people's devices), safe for a
    terminal: every character that is not printable (an escape sequence, a newline that
    would start a fake line) shown as its escape."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )


def say(message: str) -> None:
    """A notice for the user on standard error (stdout stays clean for pipes)."""
    print(f"mnemo: {message}", file=sys.stderr)


def _highlight(text: str, spans: list[tuple[int, int]]) -> str:
    if not sys.stdout.isatty() or not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], "\033[1m", text[start:end], "\033[0m"]
        last = end
    out.append(text[last:])
    return "".join(out)


def _named_time(result) -> str:
    """The header over the memories of the time a query named: its words, and "or within
    two days" when some of them were made only near it (they rank with it: people tell of a
    day in the days after; a note stored on Monday sat under "on saturday")."""
    window, text = result.window, result.window.text
    exact = (
        window.contains(r.memory.created_at) or window.contains(r.memory.updated_at)
        for r in result.results
        if r.in_window
    )
    return text if all(exact) else f"{text}, or within two days"


def _dim(line: str) -> str:
    return f"\033[2m{line}\033[0m" if sys.stdout.isatty() else line


def print_results(
    result: RecallResult, explain: bool = False, spaces: dict[str, str] | None = None
) -> None:
    """Numbered results with score and band, id, category, tags, age and a highlighted
    snippet; weak matches after a "weaker matches" line (dimmed on a terminal). A memory
    of a team space (`spaces`: its id → the space's name) says the space and who wrote it."""
    if not result.results:
        query = result.query if len(result.query) <= 80 else result.query[:79] + "…"
        print(f"No relevant memories for {query!r}.")
        return
    previous = None
    grouped = result.window is not None and any(r.in_window for r in result.results)
    for n, r in enumerate(result.results, 1):
        m = r.memory
        band = r.band or band_of(r.score)
        weak = band is Band.WEAK
        if grouped and n == 1 and r.in_window:
            print(_dim(f"   ── {_named_time(result)} ──"))
        if grouped and not r.in_window and (n == 1 or result.results[n - 2].in_window):
            print(_dim("   ── other times ──"))
        elif not grouped and weak and previous not in (None, Band.WEAK):
            print(_dim("   ── weaker matches ──"))
        previous = band
        show = _dim if weak else str
        tags = visible(" ".join(f"#{t}" for t in m.tags))
        print(show(f"{n}. [{r.score:.2f} {band}] {visible(m.display_title)}"))
        when = age(m.created_at)
        category = visible(m.category)
        print(show(f"   {m.id} · {category}{' · ' + tags if tags else ''} · {when}"))
        if mark := written_by(m.origins):  # (an agent's words: an agent that runs this too)
            print(show(f"   ({mark})"))
        if spaces and m.id in spaces:
            print(show(f"   (space {visible(spaces[m.id])}, {visible(_member(m.origins))})"))
        excerpt, spans = snippet(m.text, result.query)
        shown = visible(excerpt)
        if weak:
            print("   " + _dim(shown))
        elif shown != excerpt:  # written out, the highlighted spans would be off
            print("   " + shown)
        else:
            print("   " + _highlight(excerpt, spans))
        if m.changed:  # it superseded an older memory: what that said, and until when
            print(show(f"   ({visible(superseding.described(m.changed))})"))
        if explain:
            vec = "—" if r.vector is None else f"{r.vector:.3f}"
            kw = "—" if r.keyword is None else f"{r.keyword:.2f}"
            w = result.weights
            c = result.crowd
            crowd = f" (crowd {c[0]:.2f} ± {min(c[1], MAX_STD):.2f})" if c else ""
            print(
                f"   meaning: cosine {vec}{crowd} → {r.vector_norm:.2f} ×{w.vector:.2g} · "
                f"keywords: bm25 {kw} of {result.ideal:.1f} → {r.keyword_norm:.2f} "
                f"×{w.keyword:.2g} · relevance {r.relevance:.2f} · prominence "
                f"{r.prominence:.2f} (share {w.prominence:.2g}) → score {r.score:.2f}"
            )
    counts = {band: 0 for band in Band}
    for r in result.results:
        counts[r.band or band_of(r.score)] += 1
    bands = ", ".join(f"{n} {band}" for band, n in counts.items() if n)
    total = len(result.results)
    print(f"({total} result{'s' if total != 1 else ''}, {result.mode}: {bands})")


def print_memory(m: Memory) -> None:
    """Every field of one memory, readable: its title above its text only when the title
    says something else than the text's start (a short memory's title is its text)."""
    if m.own_title:
        print(f"{visible(m.title)}\n")
    print(visible(m.text))
    if m.reasoning:
        print(f"\nReasoning: {visible(m.reasoning)}")
    print()
    rows = [
        ("id", m.id),
        ("category", m.category),
        ("tags", ", ".join(m.tags)),
        ("references", ", ".join(m.references)),
        ("keywords", ", ".join(m.keywords or [])),
        ("project", m.source_project or ""),
        ("thread", m.thread or ""),
        ("source", m.source),
        ("confidence", m.confidence),
        ("observed", f"{m.observation_count} times"),
        ("recalled", f"{m.recall_count} times, last {age(m.last_recalled_at)}"),
        ("created", f"{m.created_at} ({age(m.created_at)})"),
        ("updated", f"{m.updated_at} ({age(m.updated_at)})"),
        ("pinned", "yes" if m.pinned else "no"),
    ]
    if m.deleted_at:
        rows.append(("in trash since", m.deleted_at))
    if m.changed:
        rows.append(("changed", superseding.described(m.changed)))
    # who wrote it (every origin of a merge, oldest first)
    for n, one in enumerate(m.origins):
        written = f" ({one.at[:19].replace('T', ' ')} UTC, {age(one.at)})" if one.at else ""
        rows.append(("origin" if n == 0 else "", one.describe(written)))
    for key, value in rows:
        if value:
            print(f"{key + ':' if key else '':<16}{visible(value)}")


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.active = False

    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        if not sys.stderr.isatty():
            return
        self.active = True
        if total:
            filled = int(30 * min(done / total, 1))
            bar = "#" * filled + "-" * (30 - filled)
            sys.stderr.write(f"\r{label} [{bar}] {done}/{total}{unit}")
        else:
            sys.stderr.write(f"\r{label} {done}{unit}")
        sys.stderr.flush()

    def end(self) -> None:
        """Finish the line."""
        if self.active:
            sys.stderr.write("\n")
            self.active = False


progress_bar = _Progress()


def _member(origins) -> str:
    """Who wrote a memory of a space, in a few words: 'by alice (device 1a2b3c4d)' or 'by
    you'."""
    one = origin.author(origins)
    return "by you" if one is None else f"by {one.name or 'a member'} (device {one.device})"
