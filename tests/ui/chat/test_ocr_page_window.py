"""The window's "OCR a page…": enabled with an OCR model loaded (greyed with the reason
otherwise), a PDF page picked, rendered and sent with the model card's prompt, the Markdown
answer shown in the chat as a table; a page that cannot be read is a sentence."""

from __future__ import annotations

from PySide6.QtGui import QTextTable

from glmdesk.chat.ocr import OCR_PROMPT, page_image
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.backends.transformers.vision import VisionLoadedModel
from glmdesk.ui.chat.markdown_view import MarkdownView
from glmdesk.ui.chat.ocr_page import OcrPageAction
from tests.helpers.glm46v import write_pdf
from tests.helpers.tool_models import ForceTokens

ANSWER_TIMEOUT_MS = 60_000
MARKDOWN = "| Item | Price |\n|---|---|\n| Tea | 3 |"


def _action(window, path, page: int = 1, asked=None):
    def choose_page(_parent, name, count):
        if asked is not None:
            asked.append((name, count))
        return page

    return OcrPageAction(
        window.session, window.input_box, window.sidebar, window.notice, window,
        choose_file=lambda _parent: str(path), choose_page=choose_page,
    )  # fmt: skip


def test_a_pdf_page_is_read_and_its_markdown_table_appears_in_the_chat(
    qtbot, make_window, glm_ocr_loaded, tmp_path, monkeypatch
):
    tok = glm_ocr_loaded.tokenizer
    script = tok.encode(MARKDOWN, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]
    forcer = ForceTokens([script])
    monkeypatch.setattr(VisionLoadedModel, "logits_processors", lambda self: (forcer,))
    window = make_window(glm_ocr_loaded)
    window.sidebar.set_params(SamplingParams(temperature=0.0, max_new_tokens=len(script) + 2))
    button = window.input_box.ocr_button
    assert button.isEnabled() and "Markdown" in button.toolTip()
    pdf = write_pdf(tmp_path / "bill.pdf", ["Bill", "| Tea | 3 |"])
    asked: list = []
    action = _action(window, pdf, page=2, asked=asked)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
        assert action.run()
    assert asked == [("bill.pdf", 2)]
    question, answer = window.session.state.messages[-2:]
    assert question.content == OCR_PROMPT and question.attachments[0].sha256 == page_image(pdf, 2).sha256
    assert answer.content == MARKDOWN
    shown = window.chat_view.messages()[-1]
    assert shown.text() == MARKDOWN
    views = shown.findChildren(MarkdownView)
    tables = [f for v in views for f in v.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 1 and tables[0].rows() == 2


def test_a_page_past_the_end_is_a_sentence_and_nothing_is_sent(qtbot, make_window, glm_ocr_loaded, tmp_path):
    window = make_window(glm_ocr_loaded)
    pdf = write_pdf(tmp_path / "one.pdf", ["Only", "Two"])
    before = len(window.session.state.messages)
    assert _action(window, pdf, page=5).run()  # rendered off the GUI thread: the sentence comes after
    qtbot.waitUntil(lambda: "one.pdf cannot be used" in window.notice.text(), timeout=10_000)
    assert "one.pdf cannot be used: it has no page 5 (it has 2 pages)" in window.notice.text()
    assert len(window.session.state.messages) == before and window.input_box.ocr_button.isEnabled()


def test_a_text_model_greys_the_button_with_the_reason(window):
    button = window.input_box.ocr_button
    assert not button.isEnabled() and button.toolTip() == "Needs an OCR model (GLM-OCR)."


def test_a_scanned_page_the_documents_name_is_read_by_the_ocr_model(
    qtbot, make_window, glm_ocr_loaded, red_photo, tmp_path
):
    import io

    from fpdf import FPDF

    from glmdesk.documents.extract import extract

    pdf = FPDF(unit="mm", format=(60, 40))
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Typed page")
    pdf.add_page()
    pdf.image(io.BytesIO(red_photo.data), x=5, y=5, w=40)  # a scanned page: a picture, no text
    path = tmp_path / "mixed.pdf"
    pdf.output(str(path))
    assert extract(path).scanned_pages == (2,)
    window = make_window(glm_ocr_loaded)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS) as done:
        assert window.ocr_page.read_page(path, 2)
    assert done.args[1].finish_reason in ("stop", "length")
    question, answer = window.session.state.messages[-2:]
    assert question.attachments[0].name == "mixed-page2.png" and answer.content
