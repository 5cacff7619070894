"""Text out of real files made here: PDF (fpdf2), DOCX (python-docx), HTML, Markdown,
code, and every kind of bad input with its sentence."""

from __future__ import annotations

import pytest

from glmdesk.documents.chunking import chunk_pages
from glmdesk.documents.extract import extract
from glmdesk.documents.problems import DocumentError
from tests.helpers.documents import write_docx, write_pdf


def _problem(path):
    with pytest.raises(DocumentError) as caught:
        extract(path)
    return caught.value.problem


def test_pdf_pages_keep_their_numbers_and_a_page_without_text_is_named_scanned(tmp_path):
    pdf = write_pdf(tmp_path / "report.pdf", [["Alpha page text."], ["The zebra count is 42."]], blank=())
    pdf2 = write_pdf(tmp_path / "mixed.pdf", [["Words here."], [], ["More words."]], blank=(2,))
    doc = extract(pdf)
    assert doc.kind == "pdf"
    assert [p.number for p in doc.pages] == [1, 2]
    assert "zebra count is 42" in doc.pages[1].text
    mixed = extract(pdf2)
    assert mixed.scanned_pages == (2,)
    assert [c.page for c in chunk_pages(mixed.pages)] == [1, 3]


def test_a_pdf_of_only_scanned_pages_is_named_as_such(tmp_path):
    problem = _problem(write_pdf(tmp_path / "scan.pdf", [[], []], blank=(1, 2)))
    assert problem.kind == "scanned"
    assert "scan.pdf has only scanned pages" in problem.message


def test_docx_headings_become_sections_and_page_breaks_pages(tmp_path):
    path = write_docx(
        tmp_path / "notes.docx",
        [
            [("h1", "Overview"), ("p", "First page text.")],
            [("h2", "Llamas"), ("p", "Llamas hum when content.")],
        ],
    )
    doc = extract(path)
    assert [p.number for p in doc.pages] == [1, 2]
    chunks = chunk_pages(doc.pages)
    assert chunks[-1].page == 2
    assert chunks[-1].section == "Overview › Llamas"
    assert "Llamas hum when content." in chunks[-1].text


def test_html_drops_scripts_and_keeps_headings(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<script>var hidden = 1</script><h1>Guide</h1><p>Step <b>one</b>.</p><h2>Next</h2><p>Two.</p>"
    )
    doc = extract(path)
    assert "hidden" not in doc.text
    assert [c.section for c in chunk_pages(doc.pages)] == ["Guide", "Guide › Next"]


def test_gb18030_text_is_read(tmp_path):
    path = tmp_path / "中文.txt"
    path.write_bytes("量子计算的原理。".encode("gb18030"))
    assert extract(path).text == "量子计算的原理。"


@pytest.mark.parametrize(
    ("make", "kind", "words"),
    [
        (lambda p: p.write_bytes(b""), "empty", "is empty"),
        (lambda p: p.write_bytes(bytes(range(256)) * 40), "binary", "holds binary data"),
        (lambda p: p.write_bytes(b"%PDF-1.7\n1 0 obj <<>> garbage"), "damaged", "is damaged"),
        (lambda p: p.with_suffix(".docx").write_bytes(b"PK\x03\x04 not a zip"), "damaged", "is damaged"),
        (
            lambda p: p.with_suffix(".docx").write_bytes(b"\xd0\xcf\x11\xe0" + bytes(600)),
            "password",
            "password",
        ),
    ],
)
def test_bad_files_get_a_sentence(tmp_path, make, kind, words):
    path = tmp_path / "bad.bin"
    make(path)
    target = path if path.exists() else path.with_suffix(".docx")
    problem = _problem(target)
    assert problem.kind == kind
    assert words in problem.message
    assert target.name in problem.message


def test_a_password_protected_pdf_is_named_as_such(tmp_path):
    problem = _problem(write_pdf(tmp_path / "locked.pdf", [["secret"]], password="pw"))
    assert problem.kind == "password"
    assert problem.message == "locked.pdf is protected by a password: save a copy without one and add that."


def test_a_2_gb_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.log"
    with path.open("wb") as f:
        f.truncate(2 * 2**30)  # sparse: no disk used
    problem = _problem(path)
    assert problem.kind == "too_large"
    assert problem.message == "huge.log is 2.0 GB; glmdesk reads documents up to 256 MB."


def test_a_missing_file(tmp_path):
    assert _problem(tmp_path / "nowhere.md").kind == "missing"
