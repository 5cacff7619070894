"""The parser and the verbs: ``glmdesk`` (the window), ``glmdesk chat`` (a terminal
conversation), ``convert``; ``serve`` (:mod:`glmdesk.cli.serve`) and ``build-llamacpp``
(:mod:`glmdesk.cli.build`) live beside it, the shared flags in :mod:`glmdesk.cli.options`."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import threading
import time

from glmdesk.cli.build import add_build_parser, build_llamacpp
from glmdesk.cli.documents import TerminalDocuments, add_document_arguments
from glmdesk.cli.models import add_models_parsers, models, pull
from glmdesk.cli.options import (
    API_KEY_ENV,
    add_model_arguments,
    add_sampling_arguments,
    apply_thinking,
    cache_settings,
    load_settings,
    progress,
    sampling,
    template_choices,
    without_uncompilable,
)
from glmdesk.cli.serve import add_serve_parser, serve
from glmdesk.cli.tools import add_tool_arguments, tool_family, tool_options, with_tools
from glmdesk.core.errors import GlmdeskError
from glmdesk.core.images import ImageAttachment
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox
from glmdesk.engine.families.template_format import format_sentence


def _chat_parser(sub) -> None:
    p = sub.add_parser(
        "chat",
        help="chat in the terminal (streams the answer)",
        description="Chat in the terminal. Sampling flags left out take the model family's defaults; "
        "Ctrl+C stops an answer and keeps it (with --prompt: prints '(stopped)' and exits with 130).",
    )
    add_model_arguments(p)
    p.add_argument(
        "--remote",
        metavar="URL",
        help="answer with an OpenAI-compatible server (vLLM, SGLang, glmdesk serve), e.g. "
        "http://gpu-box:8000/v1; --model then names the server's model",
    )
    p.add_argument("--api-key", help=f"the remote server's API key (or set {API_KEY_ENV})")
    add_sampling_arguments(p)
    p.add_argument("--system", help="system prompt (instructions the model reads before every message)")
    p.add_argument("--prompt", help="answer this one message and exit")
    p.add_argument(
        "--image",
        action="append",
        metavar="FILE",
        help="attach an image (PNG, JPEG, WebP, GIF) to the first message; repeat for several. "
        "Needs a GLM vision model (GLM-4.1V, GLM-4.6V) or a server with one",
    )
    add_tool_arguments(p)
    add_document_arguments(p)
    from glmdesk.cli.mcp import add_mcp_arguments

    add_mcp_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``glmdesk`` argument parser."""
    parser = argparse.ArgumentParser(prog="glmdesk", description="Chat with ChatGLM-family models locally.")
    parser.add_argument("--install-desktop-entry", action="store_true", help="add glmdesk to the app menu")
    parser.add_argument("--uninstall-desktop-entry", action="store_true", help="remove it from the app menu")
    parser.add_argument("--self-test", action="store_true", help="load the embedded model, answer once, exit")
    parser.add_argument(
        "--check-interpreter",
        action="store_true",
        help="start the code interpreter's kernel, run one cell, exit",
    )
    sub = parser.add_subparsers(dest="command")
    _chat_parser(sub)
    add_serve_parser(sub)
    add_build_parser(sub)
    add_models_parsers(sub)
    from glmdesk.cli.mcp import mcp_parser

    mcp_parser(sub)
    conv = sub.add_parser("convert", help="convert an original ChatGLM2/3 or GLM-4 checkpoint")
    conv.add_argument("src", help="original checkpoint folder")
    conv.add_argument("dst", nargs="?", help="output folder (default: next to the source, suffix -hf)")
    return parser


def _error(command: str, sentence: object) -> None:
    """Print a CLI error in argparse's style: ``glmdesk chat: error: <sentence>``.

    Args:
        command: ``chat``, ``convert``, or ``""`` for ``glmdesk`` itself.
        sentence: The sentence (a :class:`GlmdeskError`'s message, a ``ValueError``).
    """
    prog = f"glmdesk {command}" if command else "glmdesk"
    print(f"{prog}: error: {sentence}", file=sys.stderr)


@contextlib.contextmanager
def _ctrl_c_stops(stop: threading.Event):
    """While inside, Ctrl+C sets ``stop`` (the answer ends within a token and is kept);
    a second Ctrl+C raises :class:`KeyboardInterrupt` as usual."""
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stream_one(
    backend, messages, box, cache, stop, conversation=None, tools=None, rounds=None, documents=None
) -> tuple[str | None, str]:
    """Print one streamed answer (Ctrl+C stops it and keeps it).

    ``conversation``: the key under which the KV cache is kept for the next turn.
    ``tools``: a :class:`~glmdesk.cli.tools.TerminalTools` that answers tool calls;
    each answered call's two messages (call, observation) are appended to ``rounds``.
    ``documents``: the ``--doc`` documents (:class:`~glmdesk.cli.documents.TerminalDocuments`),
    given to the last user message; their sources are printed after the answer.

    Returns:
        ``(text, finish reason)``; the text is ``None`` after an error.
    """
    from glmdesk.chat.answer import run_answer
    from glmdesk.engine.quiet import quiet_libraries

    def stream(m, p, c, s):
        return backend.stream(m, p, c, s, conversation=conversation)

    turn = None
    if documents is not None:
        messages, turn = documents.turn(backend, messages, box.get().max_new_tokens)
    printer = _AnswerPrinter(box.get().max_new_tokens, rounds)
    events = run_answer(stream, messages, box, cache, stop, tools.tools() if tools is not None else None)
    with _run_marker(backend), _ctrl_c_stops(stop), quiet_libraries():
        for event in events:
            printer.show(event)
    answered = printer.end()
    if turn is not None and documents is not None:
        documents.print_sources(turn)
    return answered


class _AnswerPrinter:
    """Prints an answer run's events: the answer to standard output, its thinking, notes
    and figures to standard error (:mod:`glmdesk.chat.events`)."""

    def __init__(self, max_new_tokens: int, rounds: list | None) -> None:
        from glmdesk.chat.events import AnswerFigures
        from glmdesk.cli.reasoning import ThinkingPrinter

        self.max_new_tokens, self.rounds = max_new_tokens, rounds
        self.thinking = ThinkingPrinter(sys.stderr)
        self.figures, self.first = AnswerFigures(), True
        self.shown: list[str] = []  # the current reply's text
        self.last = None  # the event that ended the run

    def show(self, event) -> None:
        from glmdesk.chat import events as ev

        if isinstance(event, ev.StepFigures):
            self._figures(event.figures)
        elif isinstance(event, ev.ReasoningDelta):
            self.thinking.write(event.text)
        elif isinstance(event, (ev.TextDelta, ev.ToolCallStarted)):
            f = self.figures  # the answer begins: the thinking ends first
            self.thinking.close(f.answer_ttft_s - f.ttft_s, f.reasoning_tokens)
            if isinstance(event, ev.TextDelta):
                print(event.text, end="", flush=True)
                self.shown.append(event.text)
        elif isinstance(event, ev.ToolsAnswered):  # answered; the answer goes on
            if self.rounds is not None:
                self.rounds.extend(event.messages)
            self.shown.clear()
        elif isinstance(event, (ev.AnswerDone, ev.AnswerFailed)):
            self._figures(event.figures)
            if isinstance(event, ev.AnswerDone) and event.finish_reason == "tool_calls" and self.shown:
                print()
            self.last = event

    def _figures(self, figures) -> None:
        self.figures = figures
        if self.first and 0 < figures.reply_limit < self.max_new_tokens:
            print(
                f"(note: only {figures.reply_limit} tokens are left in the context window for this answer; "
                f"max new tokens is {self.max_new_tokens})",
                file=sys.stderr,
            )
        self.first = False

    def end(self) -> tuple[str | None, str]:
        self.thinking.close()
        print()
        return _answer_summary(self.last, "".join(self.shown))


def _run_marker(backend):
    """The "engine was generating" marker of one answer (:mod:`glmdesk.core.run_marker`)."""
    from glmdesk.core.run_marker import generating

    try:
        info = backend.info
    except RuntimeError:  # not loaded: nothing generates
        return contextlib.nullcontext()
    return generating(info.engine, info.name, "chat")


def tell_dead_runs() -> None:
    """Print one line about the newest terminal or server run that died while its engine
    answered (a crash, a kill, a power cut), with its crash log, then write this
    process's native crash traceback to a log of its own (:mod:`glmdesk.core.run_marker`).
    A window's run is left to the window, which marks its conversation."""
    from glmdesk.core.run_marker import dead_runs, describe_dead_run, enable_crash_log

    runs = dead_runs(front_ends=("chat", "serve"))
    if runs:
        more = f" ({len(runs) - 1} earlier runs also died)" if len(runs) > 1 else ""
        print(describe_dead_run(runs[-1]) + more, file=sys.stderr)
    enable_crash_log()


def _answer_summary(last, text: str) -> tuple[str | None, str]:
    """Print what followed an answer (notes, dropped messages, its timing line) to stderr.

    Args:
        last: The run's :class:`~glmdesk.chat.events.AnswerDone` or ``AnswerFailed``.
        text: The last reply's text.

    Returns:
        ``(text, finish reason)``; the text is ``None`` after an error.
    """
    from glmdesk.chat.events import AnswerFailed

    notice = getattr(last, "notice", None)
    if notice is not None:
        print(f"(note: {notice.message})", file=sys.stderr)
    if last is not None and last.figures.dropped_messages:
        print(
            f"({len(last.figures.dropped_messages)} earlier messages left the context window)",
            file=sys.stderr,
        )
    if isinstance(last, AnswerFailed):
        _error("chat", last.error.message)
        return None, "error"
    if last is None:
        return text, "stop"
    if last.finish_reason == "cancelled":
        print("(stopped)", file=sys.stderr)
    elif last.finish_reason == "repetition":
        print("(stopped: the answer kept repeating the same few tokens)", file=sys.stderr)
    f = last.figures
    reused = f", {f.reused_tokens} prompt tokens reused" if f.reused_tokens else ""
    ttft = f"TTFT {f.ttft_s:.2f} s"
    if f.answer_ttft_s:  # it thought first: its first reasoning token, then its answer's
        ttft = f"TTFT {f.ttft_s:.2f} s thinking, {f.answer_ttft_s:.2f} s answer"
    print(f"[{f.n_generated} tokens, {ttft}{reused}, {f.tokens_per_s:.1f} tokens/s]", file=sys.stderr)
    return text, last.finish_reason or "stop"


def chat(args) -> int:
    """Run ``glmdesk chat``: one answer with ``--prompt``, else an interactive loop.

    Returns:
        0, 1 when the answer failed, 2 for bad settings or a model that does not load,
        130 when Ctrl+C stopped it (the answer so far is printed and kept).
    """
    try:
        return _chat(args)
    except KeyboardInterrupt:  # Ctrl+C while loading, or a second one while answering
        print("\n(stopped)", file=sys.stderr)
        return 130


def _chat(args) -> int:
    loaded = _load_for_chat(args)
    if isinstance(loaded, int):
        return loaded
    backend, info, box, cache, toolset, tool_settings, images, documents = loaded
    _print_load_notes(backend, info, args)
    if images and not backend.capabilities().vision:
        from glmdesk.engine.backends.base import images_refused

        refused = images_refused([ChatMessage("user", "", attachments=images)], info.name, info.engine)
        backend.close()
        # The one user message has images: a one-chunk stream that carries the sentence.
        chunk = next(refused) if refused is not None else None
        if chunk is not None and chunk.error is not None:
            _error("chat", chunk.error.message)
        return 2
    system = [ChatMessage("system", args.system)] if args.system else []
    tools = None
    mcp = _open_mcp(args) if args.mcp else None
    if isinstance(mcp, int):
        backend.close()
        return mcp
    if mcp is not None:
        toolset = mcp.source.with_tools(toolset)
        from glmdesk.chat.mcp.source import tool_list_tokens, tools_context_note

        note = tools_context_note(
            tool_list_tokens(mcp.source.functions(), backend.prompt_tokens), info.context_length
        )
        if note:
            print(f"glmdesk chat: {note}", file=sys.stderr)
    if toolset:
        from glmdesk.cli.tools import TerminalTools

        family = tool_family(info)
        if family is None:
            backend.close()
            _error(
                "chat",
                f"{info.name} has no tool-call format (only ChatGLM3, GLM-4 and GLM-4.5/4.6/4.7 models do); leave out --tools and --interpreter.",
            )
            return 2
        system, tools = with_tools(system, toolset), TerminalTools(family, tool_settings, mcp=mcp)
    try:
        if args.prompt is not None:
            messages = system + [ChatMessage("user", args.prompt, attachments=images)]
            text, reason = _stream_one(
                backend, messages, box, cache, threading.Event(), tools=tools, documents=documents
            )
            if text is None:
                return 1
            return 130 if reason == "cancelled" else 0
        return _interactive(backend, system, box, cache, tools, images, documents)
    finally:
        if tools is not None:
            tools.close()
        if documents is not None:
            documents.close()
        if mcp is not None:
            mcp.close()
        backend.close()


def _open_mcp(args):
    """The MCP servers of ``--mcp``, started (each command agreed on the terminal once),
    or 2 (the error printed) when one is missing or cannot start."""
    from glmdesk.cli.mcp import TerminalMcp

    try:
        mcp = TerminalMcp(args.approve, args.mcp_config)
    except ValueError as exc:
        _error("chat", exc)
        return 2
    problems = mcp.open(args.mcp)
    if problems:
        mcp.close()
        _error("chat", " ".join(problems))
        return 2
    return mcp


def _load_for_chat(args):
    """Check ``glmdesk chat``'s options cheaply, then load the model (progress on stderr).

    Returns:
        ``(backend, info, params box, cache settings, toolset, tool settings, images,
        documents)``,
        or 2 (the error printed) for bad settings or a model that does not load.
    """
    loading = False
    try:
        settings = load_settings(args)
        cache = cache_settings(args)
        sampling(args, "generic")  # refuse bad values before a long load
        if args.engine != "auto":  # picked by name: auto may choose it again after a crash
            from glmdesk.core.distrusted_engines import trust_engine

            trust_engine(args.engine)
        toolset, tool_settings = tool_options(args)
        settings = without_uncompilable(settings, cache)
        if args.prompt is not None and not args.prompt.strip():
            _error("chat", "the prompt is empty.")
            return 2
        images = tuple(ImageAttachment.from_file(path) for path in args.image or ())
        documents = TerminalDocuments(args.doc, args.doc_budget, args.show_sources) if args.doc else None
        from glmdesk.engine.backends import create_backend  # after the cheap checks: torch takes seconds
        from glmdesk.engine.quiet import quiet_libraries

        backend = create_backend(settings)
        t0 = time.perf_counter()
        loading = True
        with quiet_libraries():
            info = backend.load(settings, progress=progress)
        print(file=sys.stderr)
        params = sampling(args, info.family)
        chosen = template_choices(args, info)
        if chosen:
            params = dataclasses.replace(params, template_kwargs=params.template_kwargs + chosen)
        box = ParamsBox(params)
    except (GlmdeskError, ValueError) as exc:
        if loading:
            print(file=sys.stderr)
        _error("chat", exc)
        return 2
    print(f"{info.describe()} (loaded in {time.perf_counter() - t0:.1f} s; {info.engine})", file=sys.stderr)
    return backend, info, box, cache, toolset, tool_settings, images, documents


def _print_load_notes(backend, info, args) -> None:
    """Print the thinking switch's note and the load's notes to stderr."""
    thinking_note = apply_thinking(backend, getattr(args, "thinking", True))
    if thinking_note:
        print(f"note: {thinking_note}", file=sys.stderr)
    if info.format_reason:
        print(f"note: {format_sentence(info)}", file=sys.stderr)
    for note in info.notes:
        if note.kind == "chat_format":  # said with its reason just above
            continue
        print(f"note: {note.message}", file=sys.stderr)
        if note.kind == "engine_fallback" and note.params.get("reason") == "crashed":
            print("note: --engine llamacpp uses llama.cpp again", file=sys.stderr)
        elif note.kind == "engine_fallback":
            print(
                "note: llama.cpp answers faster: build it once with glmdesk build-llamacpp", file=sys.stderr
            )


def _interactive(backend, system, box, cache, tools=None, images=(), documents=None) -> int:
    print("Type a message. /clear starts over, /exit leaves, Ctrl+C stops an answer.", file=sys.stderr)
    history: list[ChatMessage] = []
    stop = threading.Event()
    conversation = 0  # the KV cache is kept per conversation between turns
    while True:
        try:
            line = input("> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return 0
        if line.strip() == "/exit":
            return 0
        if line.strip() == "/clear":
            history.clear()
            backend.forget_conversation(conversation)
            conversation += 1
            print("(new conversation)", file=sys.stderr)
            continue
        if not line.strip():
            continue
        history.append(ChatMessage("user", line, attachments=images if not history else ()))
        stop.clear()
        rounds: list[ChatMessage] = []
        text, _reason = _stream_one(
            backend, system + history, box, cache, stop, conversation, tools, rounds, documents
        )
        if text is None:
            history.pop()
        else:
            history += rounds
            history.append(ChatMessage("assistant", text))


def convert(args) -> int:
    """Run ``glmdesk convert SRC [DST]``."""
    from pathlib import Path

    from glmdesk.engine import chatglm
    from glmdesk.engine.info import LoadProgress
    from glmdesk.engine.quiet import quiet_libraries

    src = Path(args.src)
    dst = Path(args.dst) if args.dst else src.with_name(src.name + "-hf")
    try:
        with quiet_libraries():
            out = chatglm.convert_checkpoint(
                src, dst, progress=lambda d, t: progress(LoadProgress("converting", d, t))
            )
    except GlmdeskError as exc:
        print(file=sys.stderr)
        _error("convert", exc.message)
        return 2
    except KeyboardInterrupt:
        print("\n(stopped)", file=sys.stderr)
        return 130
    print(f"\nconverted {src} -> {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``glmdesk`` console entry point."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.command in ("chat", "serve"):
        tell_dead_runs()
    if args.command == "chat":
        return chat(args)
    if args.command == "serve":
        return serve(args)
    if args.command == "convert":
        return convert(args)
    if args.command == "build-llamacpp":
        return build_llamacpp(args)
    if args.command == "models":
        return models(args)
    if args.command == "pull":
        return pull(args)
    if args.command == "mcp":
        from glmdesk.cli.mcp import mcp_main

        return mcp_main(args)
    if args.install_desktop_entry or args.uninstall_desktop_entry:
        from glmdesk import desktop_entry

        return desktop_entry.main(install=args.install_desktop_entry)
    if args.self_test:
        from glmdesk import selftest

        return selftest.run()
    if args.check_interpreter:
        from glmdesk.interpreter_check import check_interpreter

        return check_interpreter()
    return gui_main(argv)


def gui_main(argv: list[str] | None = None) -> int:
    """Open the window (``glmdesk`` with no verb)."""
    try:
        from glmdesk.ui.app.app import run_app
    except ImportError as exc:
        _error("", f"the window is not available ({exc}); use: glmdesk chat")
        return 2
    return run_app([sys.argv[0], *(argv or [])])
