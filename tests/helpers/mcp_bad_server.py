"""A stdio MCP server written by hand that answers every call with a malformed result
(``content`` that is not a list), for the MCP fault tests. It answers ``initialize``
and ``tools/list`` properly and offers one tool, ``broken``."""

from __future__ import annotations

import json
import sys


def _answer(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            _answer(
                request_id,
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "glmdesk-bad", "version": "1"},
                },
            )
        elif method == "tools/list":
            schema = {"type": "object", "properties": {}}
            _answer(request_id, {"tools": [{"name": "broken", "inputSchema": schema}]})
        elif method == "tools/call":
            _answer(request_id, {"content": "not a list", "isError": "perhaps"})
        else:
            _answer(request_id, {})


if __name__ == "__main__":
    main()
