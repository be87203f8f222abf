"""`thoth eval QUESTIONS.jsonl`: recall@k and MRR of a team's own questions against the index as served
(each asked of the `search` tool's function), every miss listed (README, "The `thoth` command")."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from thoth.app import Thoth
from thoth.errors import ClientError


@dataclass(frozen=True)
class Question:
    question: str
    expected: tuple[str, ...]
    source: str | None = None


@dataclass
class Scores:
    k: int
    questions: int = 0
    recall: float = 0.0
    mrr: float = 0.0
    misses: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "k": self.k,
            "questions": self.questions,
            "recall_at_k": round(self.recall, 4),
            "mrr": round(self.mrr, 4),
            "misses": self.misses,
        }

    def render(self) -> str:
        lines = [f"{self.questions} questions: recall@{self.k} {self.recall:.3f}, MRR {self.mrr:.3f}"]
        for miss in self.misses:
            lines.append(f"  miss: {miss['question']!r}: {', '.join(miss['missing'])} not among the hits")
            lines.append(f"        got: {', '.join(miss['got']) or 'no hits'}")
        return "\n".join(lines)


def read_questions(path: Path) -> list[Question]:
    """The questions of a JSON Lines file; ClientError naming the line that is not one."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            question, expected = item["question"], item["expected"]
            if not isinstance(question, str) or not isinstance(expected, list) or not expected:
                raise ValueError
            questions.append(Question(question, tuple(str(e) for e in expected), item.get("source")))
        except (ValueError, KeyError, TypeError):
            raise ClientError(
                f'{path}:{number}: expected {{"question": "...", "expected": ["file", ...]}} (and "source")'
            ) from None
    if not questions:
        raise ClientError(f"{path} has no questions")
    return questions


def score(questions: list[Question], k: int, hit_files: Callable[[Question], list[str]]) -> Scores:
    """recall@k and MRR of `hit_files` (the file of each hit, in the order served) over `questions`."""
    scores = Scores(k, questions=len(questions))
    for q in questions:
        files = hit_files(q)[:k]
        found = [e for e in q.expected if e in files]
        scores.recall += len(found) / len(q.expected)
        first = next((rank for rank, key in enumerate(files, start=1) if key in q.expected), None)
        scores.mrr += 1 / first if first else 0.0
        if len(found) < len(q.expected):
            missing = [e for e in q.expected if e not in found]
            scores.misses.append({"question": q.question, "missing": missing, "got": list(dict.fromkeys(files))})
    scores.recall /= len(questions)
    scores.mrr /= len(questions)
    return scores


def evaluate(app: Thoth, args: argparse.Namespace) -> int:
    """Run `thoth eval`; its exit code."""
    from thoth.mcp.toolsets import research  # the tool function, as the server calls it

    def hit_files(q: Question) -> list[str]:
        results = research.search(app, q.question, top_k=args.k, collection=q.source or args.source)
        return [hit.key for hit in results.hits]

    try:  # a bad question or source (ClientError) and an unreadable index (ThothError) are read()'s to report
        scores = score(read_questions(Path(args.questions)), args.k, hit_files)
    except OSError as exc:  # the file
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(scores.to_json(), indent=2) if args.json else scores.render())
    return 1 if args.fail_under is not None and scores.recall < args.fail_under else 0
