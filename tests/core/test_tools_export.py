"""A conversation's Tools section travels with it: duplicate, JSON export and import
(format version 4), Markdown export; files of the previous format import as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_io import VERSION
from glmdesk.core.tools import ConversationTools, parse_functions

FUNCTIONS = json.dumps(
    [
        {"name": "get_weather", "description": "查询天气", "parameters": {"type": "object"}},
        {"type": "function", "function": {"name": "search", "parameters": {}}},
    ],
    ensure_ascii=False,
    indent=1,
)
TOOLS = ConversationTools("functions", FUNCTIONS, max_rounds=3, timeout_s=12.5)


@pytest.fixture
def history(tmp_path: Path):
    with History(tmp_path / "history.sqlite3") as h:
        yield h


def _conversation(h: History, tools: ConversationTools | None = TOOLS, title: str = "天气") -> int:
    cid = h.create_conversation(title, model="glm-4-9b-chat")
    h.add_message(cid, "user", "北京天气？")
    h.add_message(cid, "assistant", "22 度。", finish_reason="stop")
    if tools is not None:
        h.set_conversation_tools(cid, tools)
    return cid


def test_a_duplicate_has_the_same_tools_section_and_its_own(history: History) -> None:
    half_typed = ConversationTools("functions", FUNCTIONS[:40], max_rounds=7)  # not valid JSON yet
    sources = [
        _conversation(history, TOOLS),
        _conversation(history, ConversationTools("interpreter", timeout_s=30.0)),
        _conversation(history, half_typed),
        _conversation(history, None),  # never set: NULL in the file
    ]
    copies = [history.duplicate_conversation(cid) for cid in sources]
    assert [history.conversation_tools(c) for c in copies] == [
        TOOLS,
        ConversationTools("interpreter", timeout_s=30.0),
        half_typed,
        ConversationTools(),
    ]
    history.set_conversation_tools(sources[0], ConversationTools())  # the copy is its own
    assert history.conversation_tools(copies[0]) == TOOLS
    assert [m.text for m in history.messages(copies[1])] == ["北京天气？", "22 度。"]


def test_json_export_writes_the_section_and_import_reads_it_back(history: History) -> None:
    for tools in (TOOLS, ConversationTools("interpreter", timeout_s=90.0), ConversationTools()):
        exported = history.export_json(_conversation(history, tools))
        doc = json.loads(exported)
        assert doc["version"] == VERSION == 4
        assert doc["conversation"]["tools"] == {
            "mode": tools.mode,
            "functions": tools.functions_json,
            "max_rounds": tools.max_rounds,
            "timeout_s": tools.timeout_s,
        }
        assert "always_run" not in exported  # never stored, never exported
        result = history.import_conversation(exported)
        assert result.notes == ()
        assert history.conversation_tools(result.conversation_id) == tools
        assert history.export_json(result.conversation_id) == exported  # lossless


def test_an_always_run_switch_written_into_a_file_is_not_taken(history: History) -> None:
    doc = json.loads(history.export_json(_conversation(history, ConversationTools("interpreter"))))
    doc["conversation"]["tools"]["always_run"] = True
    cid = history.import_json(json.dumps(doc))
    assert history.conversation_tools(cid) == ConversationTools("interpreter")  # no such field
    assert "always_run" not in history.export_json(cid)


def _previous_format(version: int) -> dict:
    """A file as the previous releases wrote it (``history_io.to_json`` of format 3, and
    the single-branch formats 1 and 2): no ``tools`` in the conversation."""
    messages = [
        {"role": "user", "text": "北京天气？", "created": 1.0, "updated": 1.0, "state": "complete",
         "finish_reason": None, "model": None, "settings": None,
         "stats": {"ttft_s": None, "tokens_per_s": None, "n_tokens": None, "prompt_tokens": None,
                   "dropped_tokens": None, "dropped_messages": []}},
        {"role": "assistant", "text": "22 度。", "created": 2.0, "updated": 2.0, "state": "complete",
         "finish_reason": "stop", "model": "glm-4-9b-chat", "settings": {"temperature": 0.8},
         "stats": {"ttft_s": 0.5, "tokens_per_s": 9.5, "n_tokens": 4, "prompt_tokens": 12,
                   "dropped_tokens": 0, "dropped_messages": []}},
    ]  # fmt: skip
    conversation = {"title": "old", "created": 1.0, "updated": 2.0, "model": "glm-4-9b-chat"}
    if version == 3:
        conversation["active"] = 1
        messages[0]["parent"], messages[1]["parent"] = None, 0
    return {"format": "glmdesk-conversation", "version": version, "conversation": conversation,
            "messages": messages}  # fmt: skip


@pytest.mark.parametrize("version", [1, 2, 3])
def test_files_of_the_previous_formats_import_as_before_without_tools(history: History, version) -> None:
    result = history.import_conversation(json.dumps(_previous_format(version), ensure_ascii=False))
    cid = result.conversation_id
    assert result.notes == ()
    assert [(m.role, m.text) for m in history.messages(cid)] == [
        ("user", "北京天气？"),
        ("assistant", "22 度。"),
    ]
    assert history.get_conversation(cid).title == "old"
    assert history.messages(cid)[1].stats.tokens_per_s == 9.5
    assert history.conversation_tools(cid) == ConversationTools()
    # The file as it is stored now (format 4): the same conversation, with no tools.
    again = json.loads(history.export_json(cid))
    assert again["conversation"]["tools"]["mode"] == "none"
    assert [m["text"] for m in again["messages"]] == ["北京天气？", "22 度。"]


def test_a_newer_format_is_still_refused_with_a_sentence(history: History) -> None:
    doc = _previous_format(3) | {"version": VERSION + 1}
    with pytest.raises(ValueError, match=f"this glmdesk reads 1 to {VERSION}"):
        history.import_json(json.dumps(doc))
    assert history.count_conversations() == 0


BAD_FUNCTIONS = [
    '[{"name": "get weather"}]',  # a space in the name
    '[{"name": "python"}, {"name": "f", "parameters": {"type": "array"}}]',
    '[{"name": "f"}, {"name": "f"}',  # not valid JSON
    '{"name": "f"}',  # not a list
]


@pytest.mark.parametrize("functions", BAD_FUNCTIONS)
def test_functions_that_do_not_validate_are_kept_as_written_with_their_sentences(
    history: History, functions: str
) -> None:
    doc = json.loads(history.export_json(_conversation(history, TOOLS)))
    doc["conversation"]["tools"]["functions"] = functions
    result = history.import_conversation(json.dumps(doc))
    problems = parse_functions(functions)[1]
    assert problems  # the Tools section's own sentences
    (note,) = result.notes
    assert note.kind == "import_tools_invalid"
    assert note.params == {"title": "天气", "problems": " ".join(problems), "kept": True}
    assert all(p in note.message for p in problems) and "“天气”" in note.message
    cid = result.conversation_id  # imported, nothing lost: the messages and the functions as written
    assert [m.text for m in history.messages(cid)] == ["北京天气？", "22 度。"]
    assert history.conversation_tools(cid) == ConversationTools("functions", functions, 3, 12.5)


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ([1, 2], "not an object"),
        ({"mode": "shell"}, "'shell' is not one of none, interpreter, functions"),
        ({"mode": "interpreter", "max_rounds": 0}, "1 to 50"),
        ({"mode": "interpreter", "max_rounds": 2.5}, "whole number"),
        ({"mode": "interpreter", "timeout_s": "60"}, "timeout_s must be a number"),
        ({"mode": "interpreter", "timeout_s": 1e9}, "1 to 3600 s"),
        ({"mode": "functions", "functions": 42}, "must be text"),
    ],
)
def test_a_tools_entry_that_cannot_be_used_is_left_out_with_a_note(history: History, tools, words) -> None:
    doc = json.loads(history.export_json(_conversation(history, TOOLS)))
    doc["conversation"]["tools"], doc["conversation"]["title"] = tools, ""
    result = history.import_conversation(json.dumps(doc))
    (note,) = result.notes
    assert note.kind == "import_tools_invalid" and not note.params["kept"]
    assert words in note.params["problems"] and note.params["title"] == ""
    assert "“Untitled”" in note.message and "Tools section was not imported" in note.message
    cid = result.conversation_id
    assert [m.text for m in history.messages(cid)] == ["北京天气？", "22 度。"]
    assert history.conversation_tools(cid) == ConversationTools()
    assert history.count_conversations() == 2


def test_a_hand_written_list_of_functions_is_taken(history: History) -> None:
    doc = json.loads(history.export_json(_conversation(history, TOOLS)))
    doc["conversation"]["tools"]["functions"] = json.loads(FUNCTIONS)
    result = history.import_conversation(json.dumps(doc))
    tools = history.conversation_tools(result.conversation_id)
    assert result.notes == () and json.loads(tools.functions_json) == json.loads(FUNCTIONS)
    assert [f.name for f in parse_functions(tools.functions_json)[0]] == ["get_weather", "search"]


def test_markdown_export_shows_which_tools_were_offered(history: History) -> None:
    md = history.export_markdown(_conversation(history, TOOLS))
    section = md.split("### User")[0]
    assert "## Tools\n\n- Custom functions:\n  - `get_weather`: 查询天气\n  - `search`\n" in section
    assert "Up to 3 tool calls per message." in section
    md = history.export_markdown(_conversation(history, ConversationTools("interpreter", timeout_s=30.0)))
    assert "## Tools\n\n- Code interpreter, 30 s per run\n\nUp to 5 tool calls per message." in md
    assert "## Tools" not in history.export_markdown(_conversation(history, None))
    assert "## Tools" not in history.export_markdown(_conversation(history, ConversationTools()))
    broken = history.export_markdown(_conversation(history, ConversationTools("functions", "[{")))
    assert "- Custom functions, none offered" in broken and "[{" not in broken
    labels = {
        "tools": "工具",
        "tools_interpreter": "代码解释器，每次 {seconds} 秒",
        "tools_rounds": "每条 {rounds} 次",
    }
    zh = history.export_markdown(_conversation(history, ConversationTools("interpreter")), labels)
    assert "## 工具\n\n- 代码解释器，每次 60 秒\n\n每条 5 次" in zh
