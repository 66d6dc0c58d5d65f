"""What the CLI and the popup show of a memory: snippets and highlighted words."""

from __future__ import annotations

from app.core.display import match_spans, snippet

LONG = (
    "Our staging cluster kept failing health checks after the upgrade; eventually the "
    "Kubernetes liveness probe timeout was raised from one to five seconds and the pods "
    "stopped restarting, which also fixed the alerting noise on the weekend rota."
)


def test_a_snippet_starts_and_ends_at_word_boundaries():
    excerpt, spans = snippet(LONG, "kubernetes probe", 80)
    assert excerpt.startswith("…") and excerpt.endswith("…")
    inner = excerpt.strip("…")
    words = LONG.split()
    # every word shown is a whole word of the text (the first and last too)
    assert all(word in words for word in inner.split()), inner
    assert [excerpt[a:b] for a, b in spans] == ["Kubernetes", "probe"]


def test_match_spans_find_every_matched_word_in_the_whole_text():
    text = "Pods restart.\nThe pod restarts again when the probe restarts it."
    found = [text[a:b] for a, b in match_spans(text, "restarting pods")]
    assert found == ["Pods", "restart", "pod", "restarts", "restarts"]
    assert match_spans(text, "the and of") == []  # stop words highlight nothing


def test_a_match_near_the_start_keeps_the_start():
    excerpt, spans = snippet(LONG, "staging cluster", 80)
    assert excerpt.startswith("Our staging cluster") and excerpt.endswith("…")
    assert [excerpt[a:b] for a, b in spans] == ["staging", "cluster"]


def test_a_number_is_highlighted_only_where_it_stands_whole():
    # Issue 46, item 8: "dentist on 3 March" highlighted 38 and 3406 (a number is not a
    # stem: 3 is not the start of 38); the word it names is still found as itself
    text = "Phase 3 starts 3 March; room 38, invoice 3406, dentist 12:30"
    found = [text[a:b] for a, b in match_spans(text, "dentist on 3 March")]
    assert found == ["3", "3", "March", "dentist"]
    assert [text[a:b] for a, b in match_spans(text, "12")] == ["12"]


def test_a_word_with_digits_stands_whole():
    # helper-16's review: "1990s" was stemmed to "1990" and highlighted 19905
    text = "In the 1990s we paid 100s of fees; 19905 and 1000 are other numbers, 100kg too"
    assert [text[a:b] for a, b in match_spans(text, "1990s 100s")] == ["1990s", "100s"]
