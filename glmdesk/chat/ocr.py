"""OCR a page: an image, or one page of a PDF rendered as an image, read by GLM-OCR
into Markdown (text, tables, formulas), greedily.

Every front end asks the same way: :func:`page_image` turns the file into an
:class:`~glmdesk.core.images.ImageAttachment`, :func:`ocr_messages` into the one user
turn the model card shows, :func:`ocr_sampling` forces greedy decoding on the user's
other settings.

Sources: the zai-org/GLM-OCR model card (the prompt ``Text Recognition:`` after the
page image; ``Table Recognition:`` and ``Formula Recognition:`` name the other tasks)
and its SDK's ``glmocr/config.yaml`` (PDF pages rendered with pypdfium2 at 200 dpi).
"""

from __future__ import annotations

import io
from pathlib import Path

from glmdesk.core.images import MAX_IMAGE_BYTES, ImageAttachment, invalid_image
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.glm4v import OCR_FAMILIES, greedy

#: The prompt of GLM-OCR's model card for a page of text (its Markdown output keeps
#: headings, paragraphs, tables and formulas).
OCR_PROMPT = "Text Recognition:"

#: PDF pages are rendered at this resolution (dots per inch; GLM-OCR's SDK renders at 200).
PDF_DPI = 200

#: A rendered page's longer side is at most this many pixels (a poster-sized page
#: would otherwise become a gigapixel image; the processor shrinks it anyway).
MAX_PAGE_SIDE = 4096


def is_pdf(path: str | Path) -> bool:
    """Whether the file starts with the PDF signature ``%PDF-`` (ISO 32000-1, 7.5.2).

    Raises:
        GlmdeskError: ``invalid_image`` when the file cannot be read.
    """
    p = Path(path).expanduser()
    try:
        with p.open("rb") as f:
            return f.read(5) == b"%PDF-"
    except OSError as exc:
        raise invalid_image(str(p), exc.strerror or exc.__class__.__name__) from exc


def _open_pdf(path: Path):
    import pypdfium2

    try:
        return pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:
        raise invalid_image(path.name, f"the PDF cannot be opened ({exc})") from exc


def pdf_page_count(path: str | Path) -> int:
    """The number of pages of a PDF file.

    Raises:
        GlmdeskError: ``invalid_image`` when the file cannot be read or is not a PDF.
    """
    p = Path(path).expanduser()
    if not is_pdf(p):
        raise invalid_image(p.name, "it is not a PDF file")
    pdf = _open_pdf(p)
    try:
        return len(pdf)
    finally:
        pdf.close()


def render_pdf_page(path: str | Path, page: int, dpi: int = PDF_DPI) -> ImageAttachment:
    """One page of a PDF as a PNG image (pypdfium2, PDFium's renderer).

    Args:
        path: The PDF file.
        page: The page number, from 1.
        dpi: The resolution, dots per inch (a 210 mm wide page is 1654 pixels at 200);
            lowered for a page whose longer side would pass :data:`MAX_PAGE_SIDE` pixels.

    Returns:
        A PNG attachment named ``<file stem>-page<N>.png`` (a JPEG, ``.jpg``, when the PNG
        would pass :data:`~glmdesk.core.images.MAX_IMAGE_BYTES`).

    Raises:
        GlmdeskError: ``invalid_image`` when the file is not a readable PDF or has no
            page ``page``.
    """
    p = Path(path).expanduser()
    if not is_pdf(p):
        raise invalid_image(p.name, "it is not a PDF file")
    pdf = _open_pdf(p)
    try:
        count = len(pdf)
        if not 1 <= page <= count:
            pages = "1 page" if count == 1 else f"{count} pages"
            raise invalid_image(p.name, f"it has no page {page} (it has {pages})")
        sheet = pdf[page - 1]
        try:
            width, height = sheet.get_size()  # PDF points, 1/72 inch
            scale = min(dpi / 72, MAX_PAGE_SIDE / max(width, height, 1))
            # pypdfium2 annotates scale as int; PDFium takes any positive float
            picture = sheet.render(scale=scale).to_pil()  # pyright: ignore[reportArgumentType]
        finally:
            sheet.close()
    finally:
        pdf.close()
    picture = picture.convert("RGB")
    out = io.BytesIO()
    picture.save(
        out, format="PNG", compress_level=1
    )  # fast: the bytes only travel to the processor and history
    if out.tell() <= MAX_IMAGE_BYTES:
        return ImageAttachment.from_bytes(out.getvalue(), f"{p.stem}-page{page}.png")
    out = io.BytesIO()  # a large photographic page: JPEG keeps it under the attachment limit
    picture.save(out, format="JPEG", quality=92)
    return ImageAttachment.from_bytes(out.getvalue(), f"{p.stem}-page{page}.jpg")


def page_image(path: str | Path, page: int = 1) -> ImageAttachment:
    """The page to read: an image file as it is, or page ``page`` of a PDF rendered.

    Raises:
        GlmdeskError: ``invalid_image`` for an unreadable file, a file that is neither
            a supported image nor a PDF, a page past a PDF's last, or a page other than
            1 of an image.
    """
    if is_pdf(path):
        return render_pdf_page(path, page)
    if page != 1:
        raise invalid_image(Path(path).name, "an image has only page 1")
    return ImageAttachment.from_file(path)


def ocr_messages(image: ImageAttachment, prompt: str = OCR_PROMPT) -> list[ChatMessage]:
    """The one user turn that asks for a page's text: the image, then ``prompt``."""
    return [ChatMessage("user", prompt, attachments=(image,))]


def ocr_sampling(params: SamplingParams) -> SamplingParams:
    """``params`` with greedy decoding forced (:func:`glmdesk.engine.families.glm4v.greedy`;
    the transformers engine forces it on every answer of an OCR model too)."""
    return greedy(params)


def is_ocr_model(info) -> bool:
    """Whether a loaded model (:class:`~glmdesk.engine.info.ModelInfo`) is made for OCR: its
    family (a local GLM-OCR), or for a served model the family its id names (``zai-org/GLM-OCR``)."""
    from glmdesk.engine.families import family_for_model_id

    if info.family == "remote":
        return family_for_model_id(info.name).name in OCR_FAMILIES
    return info.family in OCR_FAMILIES
