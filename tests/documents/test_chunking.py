"""Chunks follow paragraphs and headings and keep page and line."""

from __future__ import annotations

from glmdesk.documents.chunking import TARGET_CHARS, chunk_pages
from glmdesk.documents.extract import Page


def test_paragraphs_stay_whole_and_headings_start_chunks():
    para = "word " * 100  # 500 characters
    text = f"# Title\n\n{para}\n\n{para}\n\n{para}\n\n## Part two\n\nshort paragraph"
    chunks = chunk_pages([Page(None, text)])
    assert [c.section for c in chunks] == ["Title", "Title", "Title › Part two"]
    assert chunks[-1].text.startswith("## Part two")
    assert chunks[-1].line == 9
    for chunk in chunks:
        assert all(p.strip() == para.strip() or not p.startswith("word") for p in chunk.text.split("\n\n"))
        assert len(chunk.text) <= TARGET_CHARS + 10


def test_a_long_paragraph_is_cut_at_sentence_ends():
    sentence = "This sentence is about forty-five characters. "
    chunks = chunk_pages([Page(3, sentence * 100)])
    assert len(chunks) > 1
    assert all(c.page == 3 for c in chunks)
    assert all(c.text.endswith("characters.") for c in chunks)


def test_code_comments_are_not_headings():
    chunks = chunk_pages([Page(None, "# a comment\n\nx = 1")], headings=False)
    assert chunks[0].section == ""


def test_hashes_in_a_fenced_block_are_not_headings():
    chunks = chunk_pages([Page(None, "# Real\n\n```\n\n# not a heading\n\n```\n\ntext")])
    assert {c.section for c in chunks} == {"Real"}


def test_a_passage_in_text_without_blank_lines_cites_its_own_line():
    """A file with no blank lines is one block: its chunks still start at the line that
    holds their first words (a source must not cite line 1 for line 701)."""
    from glmdesk.documents.chunking import chunk_pages
    from glmdesk.documents.extract import Page

    lines = [f"Line {n} of the logbook says nothing of note today." for n in range(1, 1501)]
    lines[700] = "The password for the vault is tangerine-42."
    chunks = chunk_pages([Page(1, "\n".join(lines))], headings=False)
    (holder,) = [c for c in chunks if "tangerine-42" in c.text]
    first = holder.text.split("\n")[0].split(". ")[0]
    assert lines[holder.line - 1].startswith(first[:20])
    assert holder.line > 600 and len({c.line for c in chunks}) == len(chunks)
