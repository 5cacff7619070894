"""The one entry point an answer run calls: given the question, the conversation so far,
the attached documents and a token budget, the text to put in the user turn and the
sources it holds.

Whole documents go in when all of them fit the room left in the context (counted with the
model's own tokenizer, the answer's room kept); otherwise the passages that best match the
question and the latest turns (BM25 over the index) go in, best first, up to the
retrieval budget the user sets, each numbered and marked with its file, page and section.

Search is keywords only (BM25): no local embedding model ships with glmdesk, and none is
downloaded while it runs. (An embedding index would be added beside BM25, where such a
model is present, and the two rankings combined.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from glmdesk.documents.chunking import Chunk
from glmdesk.documents.problems import DocumentProblem
from glmdesk.documents.store import STOPWORDS, DocumentIndex, DocumentRow, match_query

_WORDS = re.compile(r"[^\W_]+")

#: Tokens kept free beside the answer's room (the chat format's own tokens around the turn).
MARGIN_TOKENS = 64

#: Characters per token assumed when the engine cannot count (a remote server): a
#: cautious figure (English runs about 4, Chinese about 1.5 characters per token).
CHARS_PER_TOKEN_GUESS = 2.5

#: The retrieval budget when the user has not set one, in tokens.
DEFAULT_RETRIEVAL_TOKENS = 3000

#: Documents whose first passages are given when no passage matches the question.
FIRST_DOCUMENTS = 8

#: Search hits looked at before the budget is filled.
CANDIDATES = 200

#: How the turn describes what follows (the model reads these).
WHOLE_HEADER = "The attached documents follow, each between <document> tags. Answer from them."
PASSAGES_HEADER = (
    "Passages from the attached documents follow, numbered. Answer from them and cite them "
    "as [1], [2] where you use them."
)


@dataclass(frozen=True)
class Source:
    """One passage (or whole document) given to the model.

    Attributes:
        number: Its number in the prompt (``[1]``, ``[2]``, ...).
        path: The file.
        page: The page it is on (``None``: a document without pages, or a whole document).
        line: Its first line on that page (or in the file), 1-based.
        section: The headings above it, joined by `` › `` (may be empty).
        passage: The text given.
        score: Its BM25 score (0.0 for a whole document).
        whole: True when the whole document was given.
    """

    number: int
    path: str
    page: int | None
    line: int
    section: str
    passage: str
    score: float = 0.0
    whole: bool = False

    @property
    def name(self) -> str:
        """The file's name."""
        return self.path.replace("\\", "/").rsplit("/", 1)[-1]

    def label(self) -> str:
        """``name, page 3, line 12`` (page left out when there is none)."""
        where = [self.name]
        if self.whole:
            return f"{self.name} (whole)"
        if self.page is not None:
            where.append(f"page {self.page}")
        where.append(f"line {self.line}")
        return ", ".join(where)


@dataclass(frozen=True)
class TurnNote:
    """Something the user should know about a question's documents.

    Attributes:
        kind: ``scanned`` (``name``'s ``pages`` have no text), ``unusable`` (``problem``
            kept a document out), ``no_match`` (no passage matched: the first ones were
            given) or ``no_room`` (no passage fits the ``tokens`` left).
        name: The document's file name (``scanned``).
        pages: The page numbers (``scanned``).
        tokens: The room there was, in tokens (``no_room``).
        problem: Why the document could not be used (``unusable``).
    """

    kind: str
    name: str = ""
    pages: tuple[int, ...] = ()
    tokens: int = 0
    problem: DocumentProblem | None = None

    @property
    def message(self) -> str:
        """The English sentence (the terminal's; the window words the kind itself)."""
        if self.kind == "scanned":
            shown = ", ".join(map(str, self.pages[:20])) + (", ..." if len(self.pages) > 20 else "")
            return f"{self.name}: pages {shown} are scanned images with no text; they are not searched."
        if self.kind == "unusable" and self.problem is not None:
            return self.problem.message
        if self.kind == "no_match":
            return "No passage matched the question's words; the documents' first passages were given."
        return f"No passage fits the room left ({self.tokens} tokens): raise the budget or shorten the conversation."


@dataclass(frozen=True)
class TokenBudget:
    """The room documents may take in one user turn.

    Attributes:
        context_length: The model's context window, in tokens.
        used: Tokens of the conversation without documents (system prompt, earlier
            turns, the question), in tokens.
        answer: Tokens kept for the answer (its ``max_new_tokens``).
        retrieval: The user's budget for retrieved passages, in tokens.

    Raises:
        ValueError: for a negative number.
    """

    context_length: int
    used: int
    answer: int
    retrieval: int = DEFAULT_RETRIEVAL_TOKENS

    def __post_init__(self) -> None:
        if min(self.context_length, self.used, self.answer, self.retrieval) < 0:
            raise ValueError("token budgets are never negative")

    @property
    def room(self) -> int:
        """Tokens left for documents in the context, answer and margin kept, in tokens (≥ 0)."""
        return max(self.context_length - self.used - self.answer - MARGIN_TOKENS, 0)


@dataclass(frozen=True)
class DocumentTurn:
    """What the documents add to one user turn.

    Attributes:
        text: The user turn for the model: the documents (whole or passages), then the question.
        sources: What was given, in prompt order.
        whole: True when whole documents were given.
        tokens: Tokens the documents take, in tokens.
        counted: True when the model's tokenizer counted them (else estimated).
        room: The room there was (:attr:`TokenBudget.room`, capped by the retrieval
            budget for passages), in tokens.
        notes: What the user should know (pages with no text, nothing matched, no room).
        question: The question as typed (searched for, and the end of :attr:`text`).
    """

    text: str
    sources: tuple[Source, ...]
    whole: bool
    tokens: int
    counted: bool
    room: int
    notes: tuple[TurnNote, ...] = ()
    question: str = ""


def _counter(count_tokens: Callable[[str], int | None] | None) -> tuple[Callable[[str], int], list[bool]]:
    exact = [True]

    def count(text: str) -> int:
        n = count_tokens(text) if count_tokens is not None else None
        if n is None:
            exact[0] = False
            return math.ceil(len(text) / CHARS_PER_TOKEN_GUESS)
        return n

    return count, exact


def _whole_block(row: DocumentRow, chunks: list[Chunk]) -> str:
    lines = [f'<document name="{row.name}">']
    page = None
    for chunk in chunks:
        if chunk.page is not None and chunk.page != page and row.pages > 1:
            page = chunk.page
            lines.append(f"[page {page}]")
        lines.append(chunk.text)
    lines.append("</document>")
    return "\n\n".join(lines)


def _passage_block(source: Source) -> str:
    head = f"[{source.number}] {source.label()}"
    if source.section:
        head += f" ({source.section})"
    return f"{head}\n{source.passage}"


def documents_for_turn(
    question: str,
    conversation: Sequence[str],
    documents: Sequence[DocumentRow],
    budget: TokenBudget,
    count_tokens: Callable[[str], int | None] | None,
    index: DocumentIndex,
) -> DocumentTurn:
    """The user turn with the attached documents (see the module's text).

    Args:
        question: The user's question as typed.
        conversation: Earlier turns' text, oldest first (the latest two join the search).
        documents: The documents on for this turn (indexed rows; failed ones are skipped).
        budget: The context's room and the retrieval budget.
        count_tokens: The model's token count of a text (``Backend.prompt_tokens``), or a
            function giving ``None`` (or ``None`` itself) where the engine cannot count:
            then tokens are estimated at :data:`CHARS_PER_TOKEN_GUESS` characters each.
        index: The index the rows are in (read on the caller's thread).

    Returns:
        The turn; with no usable document its text is the question alone.
    """
    count, exact = _counter(count_tokens)
    notes = [TurnNote("scanned", row.name, row.scanned_pages) for row in documents if row.scanned_pages]
    usable = [row for row in documents if row.chunks]
    notes += [
        TurnNote("unusable", row.name, problem=row.problem)
        for row in documents
        if row.problem and not row.chunks
    ]
    if not usable:
        return DocumentTurn(question, (), False, 0, exact[0], budget.room, tuple(notes), question)
    room = budget.room
    # Whole documents: when a cautious character bound says they might fit, count them.
    if sum(row.chars for row in usable) <= room * 8:
        blocks = [(row, _whole_block(row, index.chunks(row.id))) for row in usable]
        body = "\n\n".join(block for _, block in blocks)
        tokens = count(body)
        if tokens <= room:
            whole = tuple(
                Source(i, row.path, None, 1, "", block, whole=True)
                for i, (row, block) in enumerate(blocks, 1)
            )
            text = f"{WHOLE_HEADER}\n\n{body}\n\nQuestion: {question}"
            return DocumentTurn(text, whole, True, tokens, exact[0], room, tuple(notes), question)
    limit = min(room, budget.retrieval)
    hits = index.search(match_query(question, *conversation[-2:]), tuple(r.id for r in usable), CANDIDATES)
    if not hits:
        notes.append(TurnNote("no_match"))
        hits = [
            _first_hit(row, chunk) for row in usable[:FIRST_DOCUMENTS] for chunk in index.chunks(row.id)[:4]
        ]
    sources: list[Source] = []
    tokens = 0
    for hit in hits:
        source = Source(
            len(sources) + 1,
            hit.document.path,
            hit.chunk.page,
            hit.chunk.line,
            hit.chunk.section,
            hit.chunk.text,
            hit.score,
        )
        need = count(_passage_block(source)) + 2
        if tokens + need > limit:
            continue  # a shorter passage further down may still fit
        sources.append(source)
        tokens += need
    if not sources:
        notes.append(TurnNote("no_room", tokens=limit))
        return DocumentTurn(question, (), False, 0, exact[0], limit, tuple(notes), question)
    body = "\n\n".join(_passage_block(s) for s in sources)
    text = f"{PASSAGES_HEADER}\n\n{body}\n\nQuestion: {question}"
    return DocumentTurn(text, tuple(sources), False, tokens, exact[0], limit, tuple(notes), question)


def best_paragraph(source: Source, question: str) -> tuple[int, str]:
    """The paragraph of ``source``'s passage that shares most words with ``question``, and
    its line (in the page or file, 1-based): where in a chunk the answer likely is."""
    wanted = {w for w in _WORDS.findall(question.lower()) if w not in STOPWORDS}
    best, best_line, best_score = "", source.line, -1
    line = source.line
    for paragraph in source.passage.split("\n\n"):
        score = len(wanted & set(_WORDS.findall(paragraph.lower())))
        if score > best_score:
            best, best_line, best_score = paragraph, line, score
        line += paragraph.count("\n") + 2
    return best_line, best


def _first_hit(row: DocumentRow, chunk: Chunk):
    from glmdesk.documents.store import Hit

    return Hit(row, chunk, 0.0)
