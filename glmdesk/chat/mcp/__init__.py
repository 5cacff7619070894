"""MCP servers as a tool source beside the built-in tools (the official ``mcp`` SDK).

- :mod:`~glmdesk.chat.mcp.config`: the servers of ``mcp.json`` (the ``{"mcpServers": ...}``
  shape other apps use), importing another app's file, secrets in the keyring.
- :mod:`~glmdesk.chat.mcp.hub`: the running servers (one asyncio loop on its own thread),
  started when first needed and only after the user agreed to the command, with their
  state, restart and stop; calls with a time limit.
- :mod:`~glmdesk.chat.mcp.results`: a ``CallToolResult`` as the model reads it (text,
  images, resources, structured content), cut to a size with a note.
- :mod:`~glmdesk.chat.mcp.approvals`: what the user allowed (kept "always allow" per server
  and tool, read-only tools, agreed commands) as an approval hook.
- :mod:`~glmdesk.chat.mcp.source`: the servers' tools offered in a ``ToolSet`` and the
  runner that sends a call to its server.

No Qt: the window, ``glmdesk chat`` and ``glmdesk mcp`` use it alike.
"""
