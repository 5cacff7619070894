"""``glmdesk chat --doc FILE`` (repeatable), ``--doc-budget`` and ``--show-sources``: the
documents indexed before the model loads, each turn given them through
:func:`glmdesk.documents.documents_for_turn`, the sources printed after the answer."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

from glmdesk.core.messages import ChatMessage
from glmdesk.documents import DocumentTurn, TokenBudget, documents_for_turn
from glmdesk.documents.turn import CHARS_PER_TOKEN_GUESS, DEFAULT_RETRIEVAL_TOKENS, best_paragraph


def add_document_arguments(p) -> None:
    """``--doc``, ``--doc-budget`` and ``--show-sources`` on the ``chat`` parser."""
    p.add_argument(
        "--doc",
        action="append",
        metavar="FILE",
        help="attach a document (text, Markdown, code, PDF, DOCX, HTML) or a folder of them; repeat for "
        "several. Whole when it fits the context, else the passages that best match each question",
    )
    p.add_argument(
        "--doc-budget",
        type=int,
        default=DEFAULT_RETRIEVAL_TOKENS,
        metavar="TOKENS",
        help=f"tokens of passages given per question when the documents do not fit whole "
        f"(default {DEFAULT_RETRIEVAL_TOKENS})",
    )
    p.add_argument(
        "--show-sources",
        action="store_true",
        help="after each answer, print the documents and passages it was given (file, page, line)",
    )


class TerminalDocuments:
    """The attached documents of one ``glmdesk chat``: indexed once, given to each turn.

    Args:
        paths: Files and folders from ``--doc``.
        budget: ``--doc-budget``, in tokens.
        show_sources: ``--show-sources``.

    Raises:
        ValueError: with every problem's sentence when no document can be used, or for a
            negative budget.
    """

    def __init__(self, paths: Sequence[str], budget: int, show_sources: bool) -> None:
        from pathlib import Path

        from glmdesk.documents.indexing import folder_files, index_paths
        from glmdesk.documents.store import DocumentIndex

        if budget < 0:
            raise ValueError(f"--doc-budget must be 0 or more tokens, not {budget}.")
        self.budget, self.show_sources = budget, show_sources
        self.index = DocumentIndex()
        files: list = []
        for path in paths:  # a folder's files, attached one by one (the window's library is left as it is)
            folder = Path(path).expanduser()
            files += folder_files(folder) if folder.is_dir() else [path]
        report = index_paths(self.index, files=files, progress=_progress)
        print(file=sys.stderr)
        for problem in report.problems:
            print(f"note: {problem.message}", file=sys.stderr)
        self.rows = report.rows
        if not self.rows:
            why = " ".join(p.message for p in report.problems) or (
                "no file to read was found in " + ", ".join(str(p) for p in paths) + "."
            )
            raise ValueError("none of the documents can be used: " + why)
        pages = sum(r.pages for r in self.rows)
        print(
            f"{len(self.rows)} document{'s' if len(self.rows) != 1 else ''}, {pages} page{'s' if pages != 1 else ''} "
            f"indexed in {report.seconds:.1f} s (search: keywords, BM25; no local embedding model)",
            file=sys.stderr,
        )

    def turn(
        self, backend, messages: list[ChatMessage], max_new_tokens: int
    ) -> tuple[list[ChatMessage], DocumentTurn]:
        """``messages`` with the last (user) message given the documents.

        Args:
            backend: The loaded backend (its tokenizer counts; a remote one estimates).
            messages: The conversation, ending with the user's question.
            max_new_tokens: The answer's room, in tokens.
        """
        question = messages[-1].content
        used = backend.prompt_tokens(messages)
        if used is None:
            used = int(sum(len(m.content) for m in messages) / CHARS_PER_TOKEN_GUESS)
        budget = TokenBudget(backend.capabilities().context_length, used, max_new_tokens, self.budget)
        earlier = [m.content for m in messages[:-1] if m.role == "user"]
        turn = documents_for_turn(question, earlier, self.rows, budget, backend.prompt_tokens, self.index)
        for note in turn.notes:
            print(f"note: {note.message}", file=sys.stderr)
        return [*messages[:-1], dataclasses.replace(messages[-1], content=turn.text)], turn

    def print_sources(self, turn: DocumentTurn) -> None:
        """With ``--show-sources``: each source on a line, ``[n] file, page P, line L``
        (and its section), then the paragraph of the passage nearest the question (a whole
        document: its start), the line being that paragraph's."""
        if not self.show_sources:
            return
        counted = "" if turn.counted else " (estimated)"
        how = "whole" if turn.whole else f"{len(turn.sources)} passages"
        print(f"\nSources ({how}, {turn.tokens} of {turn.room} tokens{counted}):")
        for source in turn.sources:
            section = f" ({source.section})" if source.section else ""
            if source.whole:
                print(f"  [{source.number}] {source.label()}: {_opening(source.passage)}")
                continue
            line, paragraph = best_paragraph(source, turn.question)
            shown = dataclasses.replace(source, line=line)
            print(f"  [{source.number}] {shown.label()}{section}: {_opening(paragraph)}")

    def close(self) -> None:
        """Close the index."""
        self.index.close()


def _opening(passage: str, chars: int = 160) -> str:
    flat = " ".join(passage.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _progress(p) -> None:
    eta = f", {p.eta_s:.0f} s left" if p.eta_s is not None and p.files_done < p.files_total else ""
    print(
        f"\rindexing documents: {p.files_done}/{p.files_total} files, {p.pages_done} pages{eta}",
        end="",
        file=sys.stderr,
        flush=True,
    )
