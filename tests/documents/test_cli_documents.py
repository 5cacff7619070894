"""``glmdesk chat --doc`` with the embedded model: a 2 MB text's one fact is found and cited;
a short file goes in whole; bad documents are sentences."""

from __future__ import annotations

import random

import pytest

from glmdesk.core.messages import ChatMessage
from tests.helpers.cli import run_cli

FACT = "The lighthouse keeper on Skerry Island keeps the spare lamp key in a blue tin marked PELICAN-7731."


def _big_text(path, target_bytes=2 * 2**20):
    rng = random.Random(7)
    words = (
        "river stone market window garden letter morning harbour engine silver paper winter candle".split()
    )
    paragraphs = []
    size = 0
    while size < target_bytes:
        paragraph = " ".join(rng.choice(words) for _ in range(rng.randint(40, 120))).capitalize() + "."
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    at = len(paragraphs) * 2 // 3
    paragraphs[at] = FACT
    path.write_text("\n\n".join(paragraphs))
    return path, 2 * at + 1  # the fact's line


def _chat(*args):
    return run_cli(
        "chat",
        "--engine",
        "transformers",
        "--temperature",
        "0",
        "--max-new-tokens",
        "4",
        "--show-sources",
        *args,
    )


def test_the_one_fact_of_a_2_mb_text_is_among_the_passages_given(embedded_folder, tmp_path):
    path, line = _big_text(tmp_path / "logbook.txt")
    out = _chat("--doc", str(path), "--prompt", "Where does the lighthouse keeper keep the spare lamp key?")
    assert out.returncode == 0, out.stderr
    sources = out.stdout.split("Sources (", 1)[1]
    assert "passages" in sources.splitlines()[0]
    cited = [ln for ln in sources.splitlines() if "PELICAN-7731" in ln]
    assert cited == [f"  [1] logbook.txt, line {line}: {FACT}"]
    assert "1 document, 1 page indexed" in out.stderr


def test_a_short_file_goes_in_whole(embedded_folder, tmp_path):
    path = tmp_path / "recipe.md"
    path.write_text("# Pancakes\n\nMix flour, milk and two eggs.\n\nRest the batter ten minutes.\n")
    out = _chat("--doc", str(path), "--prompt", "How long does the batter rest?")
    assert out.returncode == 0, out.stderr
    assert "Sources (whole," in out.stdout
    assert (
        '[1] recipe.md (whole): <document name="recipe.md"> # Pancakes Mix flour, milk and two eggs. Rest the batter ten minutes. </document>'
        in out.stdout
    )


def test_the_whole_file_is_in_the_prompt_counted_by_the_models_tokenizer(embedded, tmp_path):
    from glmdesk.cli.documents import TerminalDocuments
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    path = tmp_path / "recipe.md"
    body = "Mix flour, milk and two eggs.\n\nRest the batter ten minutes."
    path.write_text(body)
    backend = TransformersBackend(embedded)  # the session's model, not closed here
    docs = TerminalDocuments([str(path)], 3000, show_sources=False)
    messages, turn = docs.turn(backend, [ChatMessage("user", "How long?")], 256)
    docs.close()
    assert turn.whole and turn.counted
    assert body in messages[-1].content
    assert turn.tokens == backend.prompt_tokens(turn.text.split("\n\nQuestion:")[0].split("\n\n", 1)[1])


@pytest.mark.parametrize("content", [b"", bytes(range(256)) * 8])
def test_unusable_documents_are_a_sentence_before_the_model_loads(tmp_path, content):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    out = run_cli("chat", "--doc", str(path), "--prompt", "hi", "--model", str(tmp_path / "no-model"))
    assert out.returncode == 2
    assert "glmdesk chat: error: none of the documents can be used: bad.txt" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_empty_folder_says_what_it_lacks(tmp_path):
    empty = tmp_path / "notes"
    empty.mkdir()
    out = run_cli("chat", "--doc", str(empty), "--prompt", "hi", "--model", str(tmp_path / "no-model"))
    assert out.returncode == 2
    assert f"none of the documents can be used: no file to read was found in {empty}." in out.stderr


def test_a_folder_of_documents_is_searched_without_joining_the_library(embedded_folder, tmp_path):
    from glmdesk.documents.store import DocumentIndex

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("The vault code is 5512.")
    (folder / "b.txt").write_text("Nothing to see.")
    out = _chat("--doc", str(folder), "--prompt", "What is the vault code?")
    assert out.returncode == 0, out.stderr
    assert "2 documents, 2 pages indexed" in out.stderr
    assert "a.md" in out.stdout.split("Sources (", 1)[1]
    assert DocumentIndex().folders() == []
