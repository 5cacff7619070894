"""The entry point: whole documents when they fit, else the best passages within the
budget, each marked with its source."""

from __future__ import annotations

import pytest

from glmdesk.documents.indexing import index_paths
from glmdesk.documents.store import DocumentIndex
from glmdesk.documents.turn import TokenBudget, documents_for_turn


def _words(text: str) -> int:  # a stand-in tokenizer: one token per word
    return len(text.split())


@pytest.fixture
def indexed(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    short = tmp_path / "short.md"
    short.write_text("# Recipe\n\nMix flour and water.\n")
    long = tmp_path / "long.txt"
    paragraphs = [f"Paragraph {i} talks about nothing in particular, filler words." for i in range(400)]
    paragraphs[250] = "The lighthouse keeper's secret code is PELICAN-7731."
    long.write_text("\n\n".join(paragraphs))
    report = index_paths(index, files=[short, long])
    return index, {r.name: r for r in report.rows}


def test_a_short_file_goes_in_whole(indexed):
    index, rows = indexed
    turn = documents_for_turn(
        "What do I mix?", [], [rows["short.md"]], TokenBudget(4096, 50, 512), _words, index
    )
    assert turn.whole and turn.counted
    assert "Mix flour and water." in turn.text and turn.text.endswith("Question: What do I mix?")
    assert '<document name="short.md">' in turn.text
    assert [s.name for s in turn.sources] == ["short.md"]


def test_a_long_file_gives_its_best_passages_within_the_budget(indexed):
    index, rows = indexed
    budget = TokenBudget(4096, 50, 512, retrieval=300)
    turn = documents_for_turn(
        "What is the lighthouse keeper's secret code?", [], list(rows.values()), budget, _words, index
    )
    assert not turn.whole
    assert turn.sources[0].name == "long.txt"
    assert "PELICAN-7731" in turn.sources[0].passage
    assert turn.sources[0].line > 1
    assert "[1] long.txt, line" in turn.text
    assert turn.tokens <= 300 and turn.room == 300


def test_the_conversation_joins_the_search(indexed):
    index, rows = indexed
    budget = TokenBudget(4096, 50, 512, retrieval=300)
    turn = documents_for_turn(
        "And its number?", ["Tell me about the lighthouse keeper"], [rows["long.txt"]], budget, _words, index
    )
    assert "PELICAN-7731" in turn.sources[0].passage


def test_no_room_says_so_and_sends_the_question_alone(indexed):
    index, rows = indexed
    turn = documents_for_turn(
        "secret code?", [], [rows["long.txt"]], TokenBudget(600, 500, 100), _words, index
    )
    assert turn.text == "secret code?" and not turn.sources
    assert "No passage fits the room left (0 tokens)" in turn.notes[0].message


def test_without_a_tokenizer_tokens_are_estimated(indexed):
    index, rows = indexed
    turn = documents_for_turn(
        "mix?", [], [rows["short.md"]], TokenBudget(4096, 50, 512), lambda _t: None, index
    )
    assert turn.whole and not turn.counted and turn.tokens > 0
