"""The conversation without Qt: one answer run and one tool loop for every front end.

- :mod:`glmdesk.chat.events`: what a run tells its front end (typed deltas, tool calls,
  results, the end of a reply with its figures).
- :mod:`glmdesk.chat.reader`: chunks of the engine in, events out; the reply's parts
  accumulated once.
- :mod:`glmdesk.chat.answer`: :func:`~glmdesk.chat.answer.run_answer`, the answer run
  with the tool loop.
- :mod:`glmdesk.chat.tools`: the approval hook and the built-in interpreter's runner.

The window's worker, ``glmdesk chat`` and ``glmdesk serve`` run it and only show its
events. It imports no Qt and no backend module (an import-linter contract).
"""
