"""A server's prompts and resources: prompts without arguments become example prompts,
resources are read as text (binary ones by type and size), and a server without them
(mcp-server-time) gives none."""

from __future__ import annotations

from glmdesk.chat.mcp import catalog


def test_prompts_without_arguments_become_example_prompts(hub):
    listed = {p.name: p for p in catalog.prompts(hub, "faults")}
    assert listed["greeting"].label == "Greet the world" and listed["greeting"].required == ()
    assert listed["review"].required == ("code",)
    assert catalog.example_prompts(hub, ["time", "faults", "missing"]) == [
        ("Greet the world", "Say hello in three languages.")
    ]
    assert catalog.prompt_text(hub, listed["review"], {"code": "x = 1"}) == "Review this code:\nx = 1"


def test_resources_are_read_as_text(hub):
    listed = {r.name: r for r in catalog.resources(hub, "faults")}
    assert listed["readme"].label == "Read me (note://readme)"
    assert catalog.resource_text(hub, listed["readme"]) == (
        "The test server's read-me: it has tools, prompts and resources."
    )
    assert catalog.resource_text(hub, listed["logo"]) == "[note://logo: image/png, about 24 bytes, not shown]"
    huge = catalog.resource_text(hub, listed["big"])
    assert huge.startswith("rrrr") and "[The result was cut: 3,045,728 of 3,145,728 characters" in huge
    long = catalog.resource_text(hub, listed["readme"], limit=10)
    assert long.startswith("The test s") and "were left out" in long


def test_a_server_without_prompts_or_resources_gives_none(hub):
    assert catalog.prompts(hub, "time") == () and catalog.resources(hub, "time") == ()
    assert catalog.prompts(hub, "missing") == () and catalog.resources(hub, "missing") == ()
