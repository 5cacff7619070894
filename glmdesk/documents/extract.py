"""Text out of document files, page by page: plain text, Markdown and source code
(any text encoding glmdesk can tell), PDF (``pypdf``, BSD-3), DOCX (``python-docx``, MIT)
and HTML (``markdownify`` on Beautiful Soup, MIT: headings become Markdown ``#`` lines so
chunks can follow them).

``markitdown`` (MIT) was weighed for DOCX and HTML: it pulls in ``magika`` and its ONNX
runtime for file-type guessing, tens of MB for what a suffix and the first bytes tell.
"""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from glmdesk.documents.problems import DocumentError, DocumentProblem

#: The largest file read, in bytes (256 MiB): a larger one is refused with ``too_large``.
MAX_DOCUMENT_BYTES = 256 * 2**20

#: Bytes looked at to tell text from binary data.
SNIFF_BYTES = 8192

PDF_SUFFIXES = (".pdf",)
DOCX_SUFFIXES = (".docx",)
HTML_SUFFIXES = (".html", ".htm", ".xhtml")


@dataclass(frozen=True)
class Page:
    """One page of a document's text.

    Attributes:
        number: The page number, 1-based, for PDF and DOCX (a DOCX page ends at each page
            break Word saved); ``None`` for text, Markdown, code and HTML (no pages).
        text: The page's text; paragraphs separated by blank lines, headings as Markdown
            ``#`` lines where the format has them.
        scanned: True for a page with no text at all (a scanned image or a picture).
    """

    number: int | None
    text: str
    scanned: bool = False


@dataclass(frozen=True)
class ExtractedDocument:
    """A document's text, page by page.

    Attributes:
        path: The file, resolved.
        kind: ``"text"``, ``"pdf"``, ``"docx"`` or ``"html"``.
        pages: Its pages in order (one for a document without pages).
        size: The file's size when read, in bytes.
        mtime_ns: Its modification time when read, in ns since the epoch.
    """

    path: str
    kind: str
    pages: tuple[Page, ...]
    size: int
    mtime_ns: int

    @property
    def scanned_pages(self) -> tuple[int, ...]:
        """The numbers of the pages with no text (scanned images)."""
        return tuple(p.number for p in self.pages if p.scanned and p.number is not None)

    @property
    def text(self) -> str:
        """All pages' text, in order."""
        return "\n\n".join(p.text for p in self.pages if p.text)


def _problem(kind: str, path: Path, detail: str = "") -> DocumentError:
    return DocumentError(DocumentProblem(kind, str(path), detail))


def _size_words(size: int) -> str:
    return f"{size / 2**30:.1f} GB" if size >= 2**30 else f"{size / 2**20:.0f} MB"


def kind_of(path: Path, head: bytes) -> str:
    """The document kind from the suffix and the first bytes (``%PDF``, a ZIP's ``PK``).

    Raises:
        DocumentError: ``binary`` for data that is no text and no known format;
            ``password`` for an encrypted Office file (an OLE container).
    """
    suffix = path.suffix.lower()
    if head.startswith(b"%PDF") or suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in DOCX_SUFFIXES:
        if head.startswith(b"\xd0\xcf\x11\xe0"):  # an encrypted OOXML file is an OLE container
            raise _problem("password", path)
        return "docx"
    if suffix in HTML_SUFFIXES:
        return "html"
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise _problem("binary", path)
    return "text"


def decode_text(data: bytes, path: Path) -> str:
    """Bytes as text: UTF-8 (with or without BOM), UTF-16 with a BOM, then GB 18030
    (Chinese files written on Windows), else refused.

    Raises:
        DocumentError: ``binary`` when no encoding reads it.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise _problem("binary", path) from None
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if encoding == "gb18030" and _controls(text) > 0.01:
            break
        return text.replace("\r\n", "\n").replace("\r", "\n")
    raise _problem("binary", path)


def _controls(text: str) -> float:
    """The share of control characters other than tab, newline, CR and form feed."""
    if not text:
        return 0.0
    bad = sum(1 for c in text[:SNIFF_BYTES] if ord(c) < 32 and c not in "\t\n\r\f")
    return bad / min(len(text), SNIFF_BYTES)


def extract(
    path: str | Path,
    cancel: threading.Event | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> ExtractedDocument:
    """Read one document's text.

    Args:
        path: The file.
        cancel: Checked between pages; when set, ``cancelled`` is raised.
        on_page: Called ``(pages done, pages in all)`` as pages are read (PDF page by
            page; other kinds once).

    Raises:
        DocumentError: with a :class:`DocumentProblem` of kind ``missing``, ``vanished``,
            ``unreadable``, ``too_large``, ``empty``, ``binary``, ``password``, ``damaged``,
            ``scanned`` (no page has text) or ``cancelled``.
    """
    path = Path(path).expanduser()
    try:
        path = path.resolve()
        stat = path.stat()
    except FileNotFoundError:
        raise _problem("missing", path) from None
    except OSError as exc:
        raise _problem("unreadable", path, exc.strerror or str(exc)) from None
    if not path.is_file():
        raise _problem("unreadable", path, "it is not a file")
    if stat.st_size > MAX_DOCUMENT_BYTES:
        raise _problem("too_large", path, _size_words(stat.st_size))
    if stat.st_size == 0:
        raise _problem("empty", path)
    try:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
        kind = kind_of(path, head)
        if kind == "pdf":
            pages = _pdf_pages(path, cancel, on_page)
        elif kind == "docx":
            pages = _docx_pages(path)
        else:
            text = decode_text(path.read_bytes(), path)
            if kind == "html":
                text = _html_markdown(text)
            pages = _text_pages(text)
    except FileNotFoundError:
        raise _problem("vanished", path) from None
    except PermissionError as exc:
        raise _problem("unreadable", path, exc.strerror or "permission denied") from None
    if kind != "pdf" and on_page is not None:
        on_page(len(pages), len(pages))
    if not any(p.text.strip() for p in pages):
        if any(p.scanned for p in pages):
            raise _problem("scanned", path)
        raise _problem("empty", path)
    return ExtractedDocument(str(path), kind, tuple(pages), stat.st_size, stat.st_mtime_ns)


def _text_pages(text: str) -> list[Page]:
    """A text's pages: one, or one per form feed (``\\f``, as ``pdftotext`` writes them)."""
    if "\f" in text.strip("\f"):
        return [Page(i, part) for i, part in enumerate(text.split("\f"), 1)]
    return [Page(None, text)]


def _pdf_pages(
    path: Path, cancel: threading.Event | None, on_page: Callable[[int, int], None] | None
) -> list[Page]:
    """A PDF's pages with ``pypdf``: text in layout order, a page without text marked scanned."""
    import logging

    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on odd files are noise here
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _problem("password", path)
        total = len(reader.pages)
    except (FileNotDecryptedError, DependencyError):
        raise _problem("password", path) from None
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _problem("damaged", path, str(exc) or type(exc).__name__) from None
    pages: list[Page] = []
    for number in range(1, total + 1):
        if cancel is not None and cancel.is_set():
            raise _problem("cancelled", path)
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _problem("damaged", path, f"page {number}: {exc or type(exc).__name__}") from None
        text = text.replace("\r\n", "\n").strip()
        pages.append(Page(number, text, scanned=not text))
        if on_page is not None:
            on_page(number, total)
    if not pages:
        raise _problem("empty", path)
    return pages


def _docx_pages(path: Path) -> list[Page]:
    """A DOCX file's paragraphs and tables in body order, headings as ``#`` lines, split
    into pages at the page breaks Word saved (``w:br w:type="page"``,
    ``w:lastRenderedPageBreak``; ECMA-376 Part 1, 17.3.3)."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise _problem("damaged", path, str(exc) or type(exc).__name__) from None
    except Exception as exc:  # lxml's XMLSyntaxError and the like: a damaged part inside
        if isinstance(exc, OSError):
            raise
        raise _problem("damaged", path, str(exc) or type(exc).__name__) from None
    pages: list[list[str]] = [[]]
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            rendered = len(block.rendered_page_breaks)  # the page turned within it: text after
            hard = sum(
                1 for run in block.runs for br in run._r.findall(_W + "br") if br.get(_W + "type") == "page"
            )
            text = block.text.strip()
            style = (block.style.name if block.style is not None else "") or ""
            if text and style.startswith("Heading"):
                level = "".join(c for c in style if c.isdigit()) or "1"
                text = "#" * min(int(level), 6) + " " + text
            elif text and style == "Title":
                text = "# " + text
            if rendered and pages[-1]:
                pages.extend([] for _ in range(rendered))
            if text:
                pages[-1].append(text)
            pages.extend([] for _ in range(hard))
        elif isinstance(block, Table):
            rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in block.rows]
            pages[-1].append("\n".join(r for r in rows if r.strip(" |")))
    while len(pages) > 1 and not pages[-1]:
        pages.pop()
    return [Page(i, "\n\n".join(parts)) for i, parts in enumerate(pages, 1)]


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _html_markdown(html: str) -> str:
    """HTML as Markdown (ATX headings), scripts and styles left out."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return MarkdownConverter(heading_style="ATX").convert_soup(soup)
