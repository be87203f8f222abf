"""The MCP server instance and tool registration.

Each tool surface lives in `toolsets/<name>.py` and exposes `register(mcp, app)`.
`THOTH_TOOLSETS` picks which are served; `list_tools` is always there.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from thoth.app import Thoth
from thoth.errors import ClientError
from thoth.mcp import aliases, sdk
from thoth.mcp.correlation import correlation, current_correlation_id
from thoth.mcp.failures import Surface, call, in_own_words, to_client
from thoth.mcp.lazy_tools import LazyPromptManager, LazyResourceManager, LazyToolManager
from thoth.mcp.outputs import Output
from thoth.mcp.progress import with_progress
from thoth.mcp.resources import citation_links
from thoth.mcp.roles import WRITER_META, current_caller, role_middleware, visible, writer_meta
from thoth.mcp.toolsets import served

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = (
    "Thoth searches and reads an indexed corpus (handbooks, PDFs, workshops) and answers with exact citations. "
    "Search first, then cite the source path and section of the passages you use."
)


def respond(data: BaseModel, text: str) -> CallToolResult:
    """A tool result: structured content for programs, readable text for the assistant, and a
    `resource_link` per doc:// citation it holds (thoth.mcp.resources: readable with resources/read)."""
    structured = data.model_dump(mode="json")
    links = citation_links(structured, data.pictures() if isinstance(data, Output) else None)
    content: list[ContentBlock] = [TextContent(type="text", text=text), *links]
    return CallToolResult(content=content, structured_content=structured)


def warned(answer: CallToolResult, notes: Sequence[str]) -> CallToolResult:
    """`answer` saying what its model notes (`Output.notes`: a keyword-only search): first in its text, and
    in `_meta.warnings`; the structured content keeps its schema."""
    if not notes:
        return answer
    said = TextContent(type="text", text="\n".join(f"Warning: {note}" for note in notes))
    meta = {**(answer.meta or {}), "warnings": list(notes)}
    return answer.model_copy(update={"content": [said, *answer.content], "meta": meta})


def _answer(model: Any) -> CallToolResult:
    return respond(model, model.render())


def expose(
    mcp: MCPServer,
    app: Thoth,
    body: Callable[..., Any],
    *,
    title: str,
    surface: Surface = "tool",
    annotations: ToolAnnotations = READ_ONLY,
    writer: bool = False,
    description: str | None = None,
    bind: Mapping[str, Callable[[], object]] | None = None,
    result: Callable[[Any], CallToolResult] = _answer,
    on_error: Callable[[ToolError], CallToolResult] | None = None,
) -> None:
    """Declare `body(app, ...) -> Model` as the MCP tool of its name, titled `title`: its parameters after `app` are the
    arguments clients see (their `Annotated[..., Field(...)]` is the schema), its docstring the description,
    its model the output schema. The call runs through `call` (one error mapping for `surface`) and answers
    `result(model)` (the model and its render()), or `on_error(exc)` for a tool error when given.

    The server fills, per call and never in the schema: `progress` (notifications/progress; the body then
    runs on a worker thread), `correlation_id` (the one ThothMCP.call_tool set for the call), and each name
    in `bind` (its value made per call).
    """
    name = body.__name__
    signature = inspect.signature(body, eval_str=True)
    supplied = {"progress", "correlation_id", *(bind or {})}
    params = [p for p in list(signature.parameters.values())[1:] if p.name not in supplied]  # after `app`
    if isinstance(mcp, ThothMCP):  # its call_tool maps alias names onto these (thoth.mcp.aliases)
        mcp.tool_parameters[name] = [p.name for p in params]
    context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context | None, default=None)
    returns = Annotated[CallToolResult, signature.return_annotation]
    # Only what the body takes is made per call.
    makers = {k: make for k, make in (bind or {}).items() if k in signature.parameters}
    if "correlation_id" in signature.parameters:
        makers["correlation_id"] = current_correlation_id

    def extra() -> dict[str, Any]:
        return {k: make() for k, make in makers.items()}

    def answer(outcome: Callable[[], Any], arguments: dict[str, Any]) -> CallToolResult:
        try:
            model = call(name, outcome, surface)
            return warned(result(model), model.notes if isinstance(model, Output) else ())
        except ToolError as exc:
            if on_error is None:
                raise  # ThothMCP.call_tool puts it in the tool's own words
            worded = ToolError(in_own_words(str(exc), arguments))
            worded.__cause__ = exc.__cause__  # the error's kind and hints (a workshop failure reads them)
            return on_error(worded)

    if "progress" in signature.parameters:

        async def tool(ctx: Context | None = None, **arguments: Any) -> CallToolResult:
            kwargs = arguments | extra()
            return await with_progress(
                ctx, lambda progress: answer(lambda: body(app, **kwargs, progress=progress), arguments)
            )

    else:

        def tool(ctx: Context | None = None, **arguments: Any) -> CallToolResult:  # type: ignore[misc]
            kwargs = arguments | extra()
            return answer(lambda: body(app, **kwargs), arguments)

    tool.__name__ = tool.__qualname__ = name
    tool.__module__ = body.__module__
    tool.__doc__ = body.__doc__
    tool.__signature__ = inspect.Signature([*params, context], return_annotation=returns)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in [*params, context]} | {"return": returns}
    meta = dict(WRITER_META) if writer else None
    doc = inspect.cleandoc(body.__doc__ or "") if description is None else description
    mcp.tool(title=title, annotations=annotations, description=doc, meta=meta)(tool)


@contextmanager
def advice(error: type[ClientError], text: str) -> Iterator[None]:
    """`text` (what to call instead, in the surface's tool names) added to an `error` that the core raised in
    its own words. Only that class, not its subclasses: a NotFound is not advised as a ClientError."""
    try:
        yield
    except error as exc:
        if type(exc) is not error:
            raise
        raise error(f"{exc}{text}", argument=exc.argument) from exc.__cause__


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _invalid_arguments(exc: ValidationError) -> str:
    """What was wrong with the arguments, by name; never their values (a 1 MB query stays out)."""
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{_short(where, 60)}: {error['msg']}")
    return "invalid arguments: " + "; ".join(problems[:5])


class ThothMCP(MCPServer):
    """The SDK's server, with every tool failure in Thoth's words.

    The SDK prefixes a tool's own message with "Error executing tool X: " and hides a crash behind the
    bare "Error executing tool X". Here a tool error is its message alone, bad arguments are named
    without their values, and a crash is a `server_fault` with a correlation id that the log line has.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The SDK's __init__ calls configure_logging(), which imports rich (a cost at every start) for a
        # handler that logging.basicConfig() then drops whenever the root logger has one (setup_logging's):
        # skip the call in exactly that case, so nothing else changes.
        import mcp.server.mcpserver.server as server

        self.tool_parameters: dict[str, list[str]] = {}  # each declared tool's arguments (`expose` fills it)
        configure = server.configure_logging
        if logging.getLogger().handlers:
            server.configure_logging = lambda *_, **__: None
        try:
            super().__init__(*args, **kwargs)
        finally:
            server.configure_logging = configure
        # Tools built on first use (thoth.mcp.lazy_tools); prompts and resource templates too (none is
        # registered before this: the SDK adds none of its own).
        settings = self.settings
        sdk.install_managers(
            self,
            tools=LazyToolManager(settings.warn_on_duplicate_tools, tools=sdk.tool_manager(self).list_tools()),
            prompts=LazyPromptManager(settings.warn_on_duplicate_prompts),
            resources=LazyResourceManager(
                settings.warn_on_duplicate_resources, resources=sdk.resource_manager(self).list_resources()
            ),
        )

    def prompt(self, **spec: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:  # type: ignore[override]
        """The SDK's `@prompt()` (arguments by keyword), the Prompt built on first use (thoth.mcp.lazy_tools)."""

        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            sdk.prompt_manager(self).add_function(fn, **spec)
            return fn

        return decorator

    async def call_tool(self, name: str, arguments: dict, context: Context | None = None):  # type: ignore[override]
        with correlation(context):
            if name in self.tool_parameters:  # the names models invent, onto the tool's own (thoth.mcp.aliases)
                try:
                    arguments = aliases.rewrite(name, arguments or {}, self.tool_parameters[name])
                except ClientError as exc:
                    raise ToolError(f"invalid arguments: {exc}") from None
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError as exc:  # a bug, or one of thoth.errors raised outside `call`
                raise ToolError(_short(str(to_client(_short(name), exc.__cause__ or exc)), 2000)) from None
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(_invalid_arguments(cause)) from cause
                message = str(exc).removeprefix(f"Error executing tool {name}: ")
                raise ToolError(_short(in_own_words(message, arguments), 2000)) from cause


def server_version() -> str:
    """The installed package's version (pyproject.toml), as serverInfo reports it."""
    try:
        return importlib.metadata.version("thoth")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def build_mcp(app: Thoth) -> MCPServer:
    """The MCP server with every served toolset's declaration (thoth.mcp.toolsets) applied: its tools,
    prompts, completions and instructions; plus `list_tools` and the hooks that apply to all."""
    from thoth.mcp.client_log import register_client_log
    from thoth.mcp.completions import register_completions
    from thoth.mcp.prompts import register_prompts
    from thoth.mcp.resources import register_resources

    toolsets = served(app.settings.toolsets)
    instructions = INSTRUCTIONS + "".join(t.instructions for t in toolsets)
    mcp = ThothMCP(name="thoth", title="Thoth", instructions=instructions, version=server_version())
    for toolset in toolsets:
        toolset.register(mcp, app)
    _register_list_tools(mcp)
    register_prompts(mcp, toolsets, app)
    register_resources(mcp, app)
    register_completions(mcp, app, {key: values for t in toolsets for key, values in t.completions.items()})
    register_client_log(mcp)
    tools = sdk.tool_manager(mcp)  # a LazyToolManager: asking for roles builds no tool
    mcp.middleware.append(role_middleware({name for name in tools.names() if writer_meta(tools.meta_of(name))}))
    return mcp


class ToolInfo(BaseModel):
    name: str
    description: str


class ToolList(BaseModel):
    tools: list[ToolInfo]


def _register_list_tools(mcp: MCPServer) -> None:
    async def list_tools() -> CallToolResult:  # type: ignore[type-arg]
        tools = visible(await mcp.list_tools(), current_caller())
        infos = [ToolInfo(name=t.name, description=(t.description or "").strip().split("\n")[0]) for t in tools]
        text = "Available tools:\n" + "\n".join(f"- {t.name}: {t.description}" for t in infos)
        return respond(ToolList(tools=infos), text)

    description = "List the tools this server offers, with what each one does."
    mcp.tool(title="List tools", annotations=READ_ONLY, description=description)(list_tools)
