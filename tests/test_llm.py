"""The optional LLM against a fake OpenAI-compatible endpoint served on loopback by the test.

The fake is a real HTTP server (Starlette on uvicorn): it records each request, can be told to
answer 429 a few times first, writes long "summaries" (so trimming to the budget is exercised) and
short cited answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.conftest import LiveServer, free_port, tree_settings, write_topic_corpus
from thoth.config import Settings
from thoth.embed import get_tokenizer
from thoth.llm import LLMError, OpenAICompatibleLLM, RateLimiter
from thoth.records import TreeNode
from thoth.store import Store
from thoth.writes.writer import Writer


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_next = 0
        self.fail_status = 429
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        app = Starlette(routes=[Route("/v1/chat/completions", self.complete, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.fail_next:
            self.fail_next -= 1
            return JSONResponse({"error": "slow down"}, status_code=self.fail_status, headers={"Retry-After": "0"})
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Write a summary"):
            passages = prompt.count("\n\n")
            text = f"These {passages} passages describe their topic in detail. " + "More detail follows here. " * 80
        else:
            text = "Beekeepers treat varroa mites with oxalic acid in winter [1]."
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": text}}]})

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake LLM did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


@pytest.fixture(scope="module", autouse=True)
def fast_calls() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("thoth.llm.REQUESTS_PER_MINUTE", 6000)  # the fake endpoint has no rate limit
        yield


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def llm_settings(db: Path, fake: FakeLLM, **overrides: object) -> Settings:
    env = {
        "THOTH_LLM_URL": fake.url,
        "THOTH_LLM_MODEL": "fake-model",
        "THOTH_LLM_API_KEY": "sk-test",
        "THOTH_TREES": "llm",
    }
    llm = Settings.from_env(env)
    assert llm.llm_provider == "openai"  # a URL: an OpenAI-compatible endpoint
    fields = ("llm_url", "llm_model", "llm_api_key", "tree_summariser")
    return tree_settings(db, **{f: getattr(llm, f) for f in fields}, **overrides)


def test_retries_on_429_then_answers(fake_llm: FakeLLM) -> None:
    llm = OpenAICompatibleLLM(fake_llm.url, "fake-model", "sk-test", per_minute=6000, retries=3, base_delay=0.01)
    fake_llm.requests.clear()
    fake_llm.fail_next = 2
    assert "oxalic acid" in llm.complete("What treats varroa?", system="be brief", temperature=0.3, max_tokens=50)
    assert len(fake_llm.requests) == 3
    body = fake_llm.requests[-1]
    assert body["model"] == "fake-model" and body["temperature"] == 0.3 and body["max_tokens"] == 50
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert fake_llm.headers[-1]["authorization"] == "Bearer sk-test"


def test_gives_up_after_its_retries_and_does_not_retry_client_errors(fake_llm: FakeLLM) -> None:
    llm = OpenAICompatibleLLM(fake_llm.url, "fake-model", per_minute=6000, retries=1, base_delay=0.01)
    fake_llm.fail_next, fake_llm.fail_status = 5, 503
    with pytest.raises(LLMError, match="after 2 attempts: HTTP 503"):
        llm.complete("hello")
    fake_llm.fail_next, fake_llm.fail_status = 1, 400
    fake_llm.requests.clear()
    with pytest.raises(LLMError, match="HTTP 400"):
        llm.complete("hello")
    assert len(fake_llm.requests) == 1
    fake_llm.fail_next, fake_llm.fail_status = 0, 429
    unreachable = OpenAICompatibleLLM(f"http://127.0.0.1:{free_port()}/v1", "m", per_minute=6000, retries=0)
    with pytest.raises(LLMError, match="cannot reach"):
        unreachable.complete("hello")


def test_rate_limiter_spaces_calls() -> None:
    now = [100.0]
    slept: list[float] = []
    limiter = RateLimiter(120, clock=lambda: now[0], sleep=slept.append)  # one call every 0.5 s
    for _ in range(3):
        limiter.wait()
    assert slept == [0.5, 1.0]  # the 2nd and 3rd calls wait for their slots


@pytest.fixture(scope="module")
def llm_index(fake_llm: FakeLLM, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = write_topic_corpus(tmp_path_factory.mktemp("small"), files_per_topic=1)
    settings = llm_settings(tmp_path_factory.mktemp("db") / "lancedb", fake_llm)
    summary = Writer(settings).run(str(root), name="small")
    assert summary.tree is not None and summary.tree.built, summary.render()
    return settings


def test_llm_summariser_writes_the_tree(llm_index: Settings) -> None:
    nodes = Store(llm_index).find(TreeNode, {"source_id": "small"})
    assert nodes and {n.summariser for n in nodes} == {"llm:openai:fake-model"}
    tok = get_tokenizer(llm_index)
    assert all(n.text.startswith("These ") for n in nodes)
    assert max(tok.count([n.text for n in nodes])) <= llm_index.tree_summary_tokens  # trimmed to the budget
    assert all(n.text.endswith(".") for n in nodes)  # cut at a sentence end


def test_generated_answer_and_llm_summary_over_http(llm_index: Settings, fake_llm: FakeLLM) -> None:
    with LiveServer(llm_index) as live:
        fake_llm.requests.clear()
        args = {"dataset_id": "small", "query": "What do beekeepers treat varroa mites with?", "temperature": 0.2}
        result = live.rpc("tools/call", {"name": "answer_question", "arguments": args}).json()["result"]
        data = result["structuredContent"]
        assert data["answer_type"] == "generated" and data["model"] == "openai:fake-model"
        assert data["answer"] == "Beekeepers treat varroa mites with oxalic acid in winter [1]." and data["citations"]
        assert result["content"][0]["text"].startswith("Answer (generated by openai:fake-model):")
        body = fake_llm.requests[-1]
        assert body["temperature"] == 0.2 and "[1]" in body["messages"][-1]["content"]

        top = Store(llm_index).find(TreeNode, {"source_id": "small", "level": 1}, fields=[], limit=2)
        ids = [n.node_id for n in top]
        summary = live.rpc("tools/call", {"name": "rag_summarize", "arguments": {"node_ids": ids}}).json()
        assert summary["result"]["structuredContent"]["summariser"] == "llm:openai:fake-model"

        fake_llm.fail_next, fake_llm.fail_status = 100, 500  # the LLM is down: a clear tool error
        try:
            failed = live.rpc("tools/call", {"name": "answer_question", "arguments": args}).json()["result"]
        finally:
            fake_llm.fail_next, fake_llm.fail_status = 0, 429
        assert failed["isError"] and "HTTP 500" in failed["content"][0]["text"]
