"""A small MCP server built with the SDK's server half, for the MCP tests.

Run as ``python -m tests.helpers.mcp_test_server`` (stdio) or with ``--http PORT``
(streamable HTTP on 127.0.0.1:PORT, path ``/mcp``). Its tools exercise what a real
server may do: answer, return an image, structured content or a resource, sleep past a
time limit, exit mid-call, return 50 MB, flood stderr; two prompts (one needs an
argument) and three resources (text, 3 MB of text and binary).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

from mcp.server.mcpserver import Image, MCPServer
from mcp.types import EmbeddedResource, TextResourceContents, ToolAnnotations

server = MCPServer("glmdesk-test")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> dict:
    """Add two whole numbers."""
    return {"sum": a + b}


@server.tool()
def picture() -> Image:
    """A 4x4 red PNG."""
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (4, 4), (255, 0, 0)).save(out, format="PNG")
    return Image(data=out.getvalue(), format="png")


@server.tool()
def notes() -> list:
    """An embedded text resource."""
    return [
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="note://1", text="the note's text")
        )
    ]


@server.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def die() -> str:
    """Exit the server in the middle of the call."""
    print("dying on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def huge(megabytes: int) -> str:
    """Return this many MB of text."""
    return "x" * (megabytes * 1024 * 1024)


@server.tool()
def shout(lines: int) -> str:
    """Write many lines to stderr, then answer."""
    for k in range(lines):
        print(f"noise line {k}", file=sys.stderr)
    sys.stderr.flush()
    return "done shouting"


@server.tool()
def mumble(megabytes: int) -> str:
    """Write one line of this many MB to stderr, then answer."""
    sys.stderr.write("m" * (megabytes * 1024 * 1024) + "\nlast words\n")
    sys.stderr.flush()
    return "done mumbling"


@server.tool()
def spawn() -> str:
    """Start a child process that outlives the call (a server with helpers of its own)."""
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; time.sleep(600)", "child-of-test-server"]
    )
    return f"child {child.pid} started"


@server.prompt(title="Greet the world")
def greeting() -> str:
    """A prompt without arguments (an example prompt)."""
    return "Say hello in three languages."


@server.prompt()
def review(code: str) -> str:
    """A prompt that needs an argument (not an example prompt)."""
    return f"Review this code:\n{code}"


@server.resource("note://readme", name="readme", title="Read me", mime_type="text/plain")
def readme() -> str:
    """A text resource (attached to a message as text)."""
    return "The test server's read-me: it has tools, prompts and resources."


@server.resource("note://big", name="big", mime_type="text/plain")
def big() -> str:
    """A 3 MB text resource (cut before it is parsed)."""
    return "r" * (3 * 1024 * 1024)


@server.resource("note://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    """A binary resource."""
    return b"\x89PNG\r\n\x1a\n" + bytes(16)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        print("test server ready", file=sys.stderr, flush=True)
        server.run()


if __name__ == "__main__":
    main()
