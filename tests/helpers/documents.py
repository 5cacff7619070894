"""Real document files made in tests: PDFs with fpdf2 (one text line per paragraph, a
page per item), DOCX files with python-docx (headings, paragraphs, page breaks)."""

from __future__ import annotations

from pathlib import Path


def write_pdf(
    path: Path, pages: list[list[str]], password: str | None = None, blank: tuple[int, ...] = ()
) -> Path:
    """A PDF whose page ``i`` holds the paragraphs ``pages[i]``; pages numbered (1-based) in
    ``blank`` get a drawn rectangle and no text (as a scanned page has none). With
    ``password``, the file is encrypted (RC4, which pypdf opens without extra packages)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for number, paragraphs in enumerate(pages, 1):
        pdf.add_page()
        if number in blank:
            pdf.rect(20, 20, 150, 200, style="F")
            continue
        for paragraph in paragraphs:
            pdf.multi_cell(0, 6, paragraph)
            pdf.ln(6)
    if password is not None:
        from fpdf.enums import EncryptionMethod

        pdf.set_encryption(
            owner_password=password + "-owner", user_password=password, encryption_method=EncryptionMethod.RC4
        )
    pdf.output(str(path))
    return path


def write_docx(path: Path, pages: list[list[tuple[str, str]]]) -> Path:
    """A DOCX file: each page a list of ``(style, text)``, style ``"h1"``/``"h2"`` for
    headings or ``"p"``; a page break between pages."""
    import docx

    document = docx.Document()
    for number, blocks in enumerate(pages):
        if number:
            document.add_page_break()
        for style, text in blocks:
            if style.startswith("h"):
                document.add_heading(text, level=int(style[1:]))
            else:
                document.add_paragraph(text)
    document.save(str(path))
    return path


def stuck_child(database, _files, _folders, _cancel, _conn) -> None:
    """An indexing child that never stops (as one stuck in a page): marks ``<database>.started``."""
    import time

    Path(database).with_suffix(".started").touch()
    while True:
        time.sleep(1)
