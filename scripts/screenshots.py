#!/usr/bin/env python3
"""Take the README's screenshots from the real app on a real X server.

Usage (Debian/Ubuntu: ``apt-get install xvfb fonts-noto-cjk fonts-noto-color-emoji``)::

    xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py --all docs/screenshots
    xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py en light OUT.png welcome
    LANG=zh_CN.UTF-8 xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py zh_CN dark OUT.png
    xvfb-run -s "-screen 0 1024x700x24" .venv/bin/python scripts/screenshots.py en light OUT.png --size 1024x700
    xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py en dark OUT.png math
    xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py en light OUT.png vision
    xvfb-run -s "-screen 0 1280x800x24" .venv/bin/python scripts/screenshots.py en light OUT.png --engine transformers

The window is ``--size WxH`` (default 1280x800) at the screen's top left, and the shot is that
size (the X screen may be bigger). ``--all FOLDER`` takes the README's eight: English and
Chinese, light and dark, 1280x800 and 1024x700. The embedded model answers the welcome's first
example prompt (greedy, at most 32 new tokens), then the answer is regenerated at a
higher temperature, so it shows the "‹ 2/2 ›" switch; the mouse rests on the answer so
its footer (figures and actions) shows. Three earlier conversations (yesterday, three and
nine days ago) are written into the history beforehand so the list shows its date headers;
everything in the chat is the model's.
With ``math`` the model is loaded but does not answer: a conversation full of formulas
(:data:`MATH_ANSWER`, written by hand, not by the model) is written into the history and
opened, and the screen is grabbed once every formula is drawn.
With ``vision`` a tiny random GLM-4.1V (the tests' builder, :mod:`tests.helpers.glm4v`) is
loaded instead, a picture drawn here (:func:`picture`) is attached and the model answers
"What is in this picture?": the thumbnail and the size note are the point (a random model
writes noise).
The screen is grabbed from the X server (``QScreen.grabWindow(0)``). Settings, history
and model copies go to a temporary folder (``GLMDESK_MODEL_CACHE`` is kept when set).
"""

from __future__ import annotations

import os
import sys
import tempfile

MATH_QUESTION = "Why is the Gaussian integral equal to the square root of pi?"
MATH_ANSWER = r"""The **Gaussian integral** is

$$\int_{-\infty}^{\infty} e^{-x^2}\,dx = \sqrt{\pi}$$

**Why $\pi$ appears.** Call the integral $I$ and square it: two copies become one integral over the plane,

$$I^2 = \int_{-\infty}^{\infty}\int_{-\infty}^{\infty} e^{-(x^2+y^2)}\,dx\,dy$$

In polar coordinates $x = r\cos\theta$, $y = r\sin\theta$ and $dx\,dy = r\,dr\,d\theta$, so

$$I^2 = \int_0^{2\pi}\int_0^{\infty} e^{-r^2}\,r\,dr\,d\theta = 2\pi \cdot \frac{1}{2} = \pi$$

and $I = \sqrt{\pi}$, since $I > 0$. Two consequences:

1. The normal density $\varphi(x) = \frac{1}{\sigma\sqrt{2\pi}}\, e^{-(x-\mu)^2/2\sigma^2}$ integrates to $1$.
2. \(\Gamma(\tfrac{1}{2}) = \sqrt{\pi}\), from $\Gamma(s) = \int_0^\infty t^{s-1} e^{-t}\,dt$ with $t = x^2$.

In code, `norm.pdf(x)` computes $\varphi$; a price such as $3 or $5 stays text."""


def picture() -> bytes:
    """A 480x320 PNG drawn here: a sky, a sun, two hills and a house (for ``vision``)."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", (480, 320), (120, 180, 235))
    draw = ImageDraw.Draw(image)
    draw.ellipse((360, 30, 430, 100), fill=(255, 215, 80))
    draw.ellipse((-120, 190, 300, 480), fill=(70, 150, 70))
    draw.ellipse((180, 210, 620, 520), fill=(90, 170, 80))
    draw.rectangle((250, 190, 330, 250), fill=(200, 90, 70))
    draw.polygon([(240, 192), (290, 150), (340, 192)], fill=(120, 60, 50))
    draw.rectangle((280, 215, 300, 250), fill=(90, 60, 40))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


#: ``--all FOLDER``: the README's set, (language, theme, size) each.
ALL_SHOTS = [
    (language, theme, size)
    for size in ("1280x800", "1024x700")
    for language in ("en", "zh_CN")
    for theme in ("light", "dark")
]


def shoot_all(folder: str) -> int:
    """Take every shot of :data:`ALL_SHOTS` into ``folder`` as ``window-LANG-THEME-WxH.png``,
    each in its own process (the language is read at start)."""
    import subprocess

    os.makedirs(folder, exist_ok=True)
    failed = 0
    for language, theme, size in ALL_SHOTS:
        out = os.path.join(folder, f"window-{language}-{theme}-{size}.png")
        env = dict(os.environ, LANG="zh_CN.UTF-8" if language == "zh_CN" else "en_US.UTF-8")
        run = subprocess.run(
            [sys.executable, __file__, language, theme, out, "--size", size], env=env, check=False
        )
        failed += run.returncode != 0
    return 1 if failed else 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--all"]:
        return shoot_all(args[1])
    width, height = 1280, 800
    if "--size" in args:
        at = args.index("--size")
        width, height = (int(v) for v in args[at + 1].split("x"))
        del args[at : at + 2]
    engine = None  # --engine NAME: load the embedded model on this engine (default: the usual choice)
    if "--engine" in args:
        at = args.index("--engine")
        engine = args[at + 1]
        del args[at : at + 2]
    language, theme, out = args[0], args[1], args[2]
    welcome_only = args[3:] == ["welcome"]  # the empty chat, before any message
    math_only = args[3:] == ["math"]  # a conversation full of formulas, no answer
    vision_only = args[3:] == ["vision"]  # a picture sent to a tiny GLM-4.1V
    home = tempfile.mkdtemp(prefix="glmdesk-shots-")
    os.environ["GLMDESK_HOME"] = home
    os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "config")

    from PySide6.QtCore import QCoreApplication, QPoint, QTimer
    from PySide6.QtGui import QCursor
    from PySide6.QtWidgets import QApplication

    from glmdesk.core.history import History
    from glmdesk.core.settings import SamplingParams
    from glmdesk.ui.app.app import window_with_history
    from glmdesk.ui.app.window_menus import theme_controller
    from glmdesk.ui.common.i18n import install_translators
    from glmdesk.ui.common.settings_store import SettingsStore
    from glmdesk.ui.common.theme import apply_interface_font

    QCoreApplication.setOrganizationName("glmdesk-screenshots")
    QCoreApplication.setApplicationName("glmdesk-screenshots")
    app = QApplication(sys.argv)
    store = SettingsStore()
    store.save_language(language)
    store.save_theme(theme)
    store.save_sampling(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=32))
    if engine is not None:
        from glmdesk.core.settings import LoadSettings

        store.save_last_model(LoadSettings(engine=engine))
    if vision_only:
        from pathlib import Path

        from glmdesk.core.settings import LoadSettings

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.helpers.glm4v import write_glm4v_folder

        folder = write_glm4v_folder(Path(home) / "GLM-4.1V-tiny")
        store.save_last_model(LoadSettings(model=str(folder), device="cpu", engine="transformers"))
        store.save_sampling(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=20))
    apply_interface_font(app, install_translators(app, language))
    theme_controller(store)
    with History() as history:  # earlier conversations, so the list is not empty
        import time

        for title, question, days_ago in (
            ("Quantum computing basics", "What is a qubit?", 9),
            ("周末去杭州的行程", "帮我规划一个周末去杭州的行程。", 3),
            ("Sourdough starter", "How do I keep a sourdough starter alive?", 1),
        ):
            cid = history.create_conversation(title)
            history.add_message(cid, "user", question)
            history.connection.execute(  # written days ago: the list shows its date headers
                "UPDATE conversations SET updated = ? WHERE id = ?", (time.time() - days_ago * 86400, cid)
            )
        history.connection.commit()
        if math_only:
            math_id = history.create_conversation("The Gaussian integral")
            history.add_message(math_id, "user", MATH_QUESTION)
            history.add_message(math_id, "assistant", MATH_ANSWER)

    window = window_with_history(store=store)
    window.move(0, 0)
    window.resize(width, height)
    window.show()
    steps = {"answers": 0}

    def grab() -> None:
        screen = app.primaryScreen()
        shot = screen.grabWindow(0, 0, 0, width, height)  # the window's size, on any bigger screen
        shot.save(out)
        print(f"saved {out} ({shot.width()}x{shot.height()})")
        window.close()
        app.quit()

    def on_finished(_request_id, _chunk) -> None:
        steps["answers"] += 1
        if vision_only:
            answer = window.chat_view.messages()[1]
            QCursor.setPos(answer.mapToGlobal(QPoint(answer.width() // 2, answer.height() // 2)))
            QTimer.singleShot(800, grab)
            return
        if steps["answers"] == 1:
            window.sidebar.set_params(SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=32, seed=7))
            QTimer.singleShot(200, lambda: window.branch_actions.regenerate_at(1))
            return
        answer = window.chat_view.messages()[1]
        window.branch_actions.footers()[1].set_revealed(True)
        QCursor.setPos(answer.mapToGlobal(QPoint(answer.width() // 2, answer.height() // 2)))
        QTimer.singleShot(800, grab)

    def grab_when_drawn() -> None:
        from glmdesk.ui.chat.math_render import shared_renderer

        segments = [view for message in window.chat_view.messages() for view in message.view.segments()]
        if shared_renderer().pending() or any(view.is_drawing_formulas() for view in segments):
            QTimer.singleShot(200, grab_when_drawn)
        else:
            window.chat_view.verticalScrollBar().setValue(0)
            QTimer.singleShot(800, grab)

    def on_ready(_info) -> None:
        if math_only:
            window.history_controller.open_conversation(math_id)
            QTimer.singleShot(500, grab_when_drawn)
            return
        if welcome_only:
            QTimer.singleShot(800, grab)
            return
        if vision_only:
            from glmdesk.core.images import ImageAttachment

            window.input_box.add_images([ImageAttachment.from_bytes(picture(), "hills.png")])
            QTimer.singleShot(300, lambda: window.send_message("What is in this picture?"))
            return
        button = window.chat_area.welcome.example_buttons[0 if language == "en" else 1]
        QTimer.singleShot(300, button.click)

    window.loader.model_ready.connect(on_ready)
    window.session.answer_finished.connect(on_finished)
    QTimer.singleShot(1_500_000, app.quit)  # never hang (25 min: a loaded 2-core machine)
    window.start()
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(main())
