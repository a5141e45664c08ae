"""Search snippets: the text around the first match, HTML-escaped, every match in <mark>; and the query's
words and substring pattern. Pure functions, no database."""

from __future__ import annotations

import pytest

from commands.errors import Invalid
from projections.views.conversation_search import SNIPPET, highlight, parse_terms


def terms(q: str):
    return parse_terms({"q": q})


def test_word_starts_are_marked_and_the_rest_escaped():
    assert highlight("Refunds <b>&</b> refusals: REFUND me", terms("refu")) == (
        "<mark>Refunds</mark> &lt;b&gt;&amp;&lt;/b&gt; <mark>refusals</mark>: <mark>REFUND</mark> me")


def test_the_substring_is_marked_inside_a_word():
    assert highlight("write to billing-x7@shop.example", terms("x7@shop")) == (
        "write to billing-<mark>x7@shop</mark>.example")


def test_a_long_text_is_cut_around_the_first_match_at_words():
    text = "lorem ipsum " * 20 + "the needle is here " + "dolor sit " * 30
    snippet = highlight(text, terms("needle"))
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "<mark>needle</mark>" in snippet
    assert not snippet[1:].startswith(" ") and len(snippet.replace("<mark>", "").replace("</mark>", "")) <= SNIPPET + 2
    assert snippet[1:].split()[0] in ("lorem", "ipsum", "the")  # whole words


def test_no_markup_can_come_from_the_text():
    snippet = highlight('<mark>x</mark> <img src=x onerror="alert(1)"> mark', terms("mark"))
    assert snippet == ("&lt;<mark>mark</mark>&gt;x&lt;/<mark>mark</mark>&gt; &lt;img src=x onerror=&quot;alert(1)"
                       "&quot;&gt; <mark>mark</mark>")


def test_terms():
    found = terms("  Refund   ORDER-42 ")
    assert found.text == "Refund ORDER-42" and found.words == ("refund", "order", "42")
    assert terms("50%_off").substring_pattern == "%50\\%\\_off%"
    assert terms("ab").substring_pattern is None
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(Invalid):
            terms(bad)
