"""The command line: ``glmdesk`` opens the window; ``glmdesk chat`` streams in a terminal;
``glmdesk serve`` serves the model over an OpenAI-compatible API (:mod:`.serve`);
``glmdesk convert`` converts an original ChatGLM checkpoint; ``glmdesk build-llamacpp``
builds llama.cpp's engine (:mod:`.build`). The parser and the verbs are in
:mod:`.commands`, the flags they share in :mod:`.options`."""

from glmdesk.cli.commands import build_parser, gui_main, main

__all__ = ["build_parser", "gui_main", "main"]
