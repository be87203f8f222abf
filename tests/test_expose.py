"""thoth.mcp.tools.expose: a tool declared once, by its body `(app, typed args) -> model`.

The body's arguments after `app` are the schema (names, order, descriptions, bounds, defaults), its
docstring the description, its model the output schema; what the server fills (progress, correlation_id,
`bind`) stays out of the schema; a direct call gets plain defaults. Runs the real SDK server in-process.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from thoth.errors import ClientError, NotFound
from thoth.mcp.tools import ThothMCP, advice, expose


class Echo(BaseModel):
    words: list[str]
    tag: str

    def render(self) -> str:
        return f"{self.tag}: {' '.join(self.words)}"


def echo(
    app: dict[str, str],
    text: Annotated[str, Field(description="what to echo", min_length=1)],
    times: Annotated[int, Field(description="how often", ge=1, le=3)] = 1,
    *,
    correlation_id: str = "direct",
    tag: str = "plain",
) -> Echo:
    """Echo a text.

    Several times, if asked.
    """
    if text == "bad":
        raise ClientError("text may not be 'bad'", argument="text")
    return Echo(words=[text] * times, tag=f"{app['prefix']}{tag}:{len(correlation_id) > 0}")


def slow_echo(app: dict[str, str], text: Annotated[str, Field(description="what to echo")], *, progress: Any) -> Echo:
    """Echo a text, reporting progress."""
    progress(0, 1, "echoing")
    if text == "bad":
        raise ClientError("text may not be 'bad'", argument="text")
    return Echo(words=[text], tag=app["prefix"])


def _refused(exc: ToolError) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"refused: {exc}")], is_error=True)


def _server() -> ThothMCP:
    mcp = ThothMCP(name="test")
    app = {"prefix": "p-"}
    expose(mcp, app, echo, title="Echo", bind={"tag": lambda: "bound"})
    expose(mcp, app, slow_echo, title="Echo slowly", writer=True, on_error=_refused)
    return mcp


def _tools() -> dict[str, Any]:
    return {t.name: t for t in anyio.run(_server().list_tools)}


def test_the_schema_is_the_bodys_arguments_after_app_and_nothing_the_server_fills() -> None:
    tools = _tools()
    schema = tools["echo"].input_schema
    assert list(schema["properties"]) == ["text", "times"]  # no ctx, correlation_id or bound tag
    assert schema["properties"]["text"] == {
        "description": "what to echo",
        "minLength": 1,
        "title": "Text",
        "type": "string",
    }
    assert schema["properties"]["times"] == {
        "default": 1,
        "description": "how often",
        "maximum": 3,
        "minimum": 1,
        "title": "Times",
        "type": "integer",
    }
    assert schema["required"] == ["text"] and schema["title"] == "echoArguments"
    assert tools["echo"].description == "Echo a text.\n\nSeveral times, if asked."
    assert tools["echo"].output_schema == Echo.model_json_schema()
    assert list(tools["slow_echo"].input_schema["properties"]) == ["text"]  # no progress
    assert tools["slow_echo"].meta and tools["echo"].meta is None  # the writer role's mark
    assert tools["echo"].annotations.read_only_hint is True


def test_a_call_answers_the_model_and_its_text_and_a_direct_call_gets_plain_defaults() -> None:
    mcp = _server()
    result = anyio.run(mcp.call_tool, "echo", {"text": "hi", "times": 2})
    assert result.structured_content == {"words": ["hi", "hi"], "tag": "p-bound:True"}
    assert result.content == [TextContent(type="text", text="p-bound:True: hi hi")]
    slow = anyio.run(mcp.call_tool, "slow_echo", {"text": "yo"})
    assert slow.structured_content == {"words": ["yo"], "tag": "p-"}
    assert echo({"prefix": ""}, "hi") == Echo(words=["hi"], tag="plain:True")


def test_a_clients_mistake_is_a_tool_error_naming_the_argument() -> None:
    with pytest.raises(ToolError, match="text may not be 'bad'"):
        anyio.run(_server().call_tool, "echo", {"text": "bad"})
    with pytest.raises(ToolError, match="times"):
        anyio.run(_server().call_tool, "echo", {"text": "hi", "times": 10})
    refused = anyio.run(_server().call_tool, "slow_echo", {"text": "bad"})  # on_error: the surface's own shape
    assert refused.is_error and refused.content == [TextContent(type="text", text="refused: text may not be 'bad'")]


def test_advice_names_the_surfaces_tools_on_the_one_error_class_it_is_for() -> None:
    with pytest.raises(ClientError, match=r"^url must be a page URL, e\.g\. from list_pages$") as raised:
        with advice(ClientError, ", e.g. from list_pages"):
            raise ClientError("url must be a page URL", argument="url")
    assert raised.value.argument == "url"
    with pytest.raises(NotFound, match=r"^no page 'x'$"):  # a subclass is not advised as its base
        with advice(ClientError, ", e.g. from list_pages"):
            raise NotFound("no page 'x'")
