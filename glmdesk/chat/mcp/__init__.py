"""MCP servers as a tool source beside the built-in tools (the official ``mcp`` SDK).

- :mod:`~glmdesk.chat.mcp.config`: the servers of ``mcp.json`` (the ``{"mcpServers": ...}``
  shape other apps use), importing another app's file, secrets in the keyring.
- :mod:`~glmdesk.chat.mcp.hub`: the running servers (one asyncio loop on its own thread),
  started when first needed and only after the user agreed to the command, with their
  state, restart and stop; calls with a time limit.
- :mod:`~glmdesk.chat.mcp.status`: a server's state and its tools, as plain values.
- :mod:`~glmdesk.chat.mcp.process`: a stdio server's stderr tail and process group.
- :mod:`~glmdesk.chat.mcp.transport`, :mod:`~glmdesk.chat.mcp.relay`,
  :mod:`~glmdesk.chat.mcp.shrink`: the SDK client of a server; huge answers cut before
  they are parsed (the HTTP client's hooks; a relay process in front of a stdio server).
- :mod:`~glmdesk.chat.mcp.results`: a ``CallToolResult`` as the model reads it (text,
  images, resources, structured content), cut to a size with a note.
- :mod:`~glmdesk.chat.mcp.catalog`: a server's prompts (example prompts) and resources
  (attached to a message as text).
- :mod:`~glmdesk.chat.mcp.approvals`: what the user allowed (kept "always allow" per server
  and tool, read-only tools, agreed commands) as an approval hook.
- :mod:`~glmdesk.chat.mcp.source`: the servers' tools offered in a ``ToolSet`` and the
  runner that sends a call to its server.

No Qt: the window, ``glmdesk chat`` and ``glmdesk mcp`` use it alike.
"""
