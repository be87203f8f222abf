"""What a reader of a passage should know before acting on it: the flags a search hit carries (issue 52).

`instructions`: the passage addresses an AI assistant with instructions ("ignore previous instructions",
"you are an AI…", "AI assistants must…", "system prompt", "do not tell the user"). Text a person never
sees is left out at ingest (thoth/writes/parsers/unseen.py); text like this that a person does see is
still what the document says, so it is kept and searchable, and a hit that carries it says so instead
of being dropped. The patterns are a short list (`INSTRUCTION_PATTERNS`, docs/security.md): they catch the
common phrasings in English, not a paraphrase, another language, or an instruction split across chunks,
and a page about prompts or assistants is flagged as readily as an attack.

Computed on the few hits a search returns, when it returns them: no column, nothing to re-index when
the list changes, a few microseconds a hit.
"""

from __future__ import annotations

import re

INSTRUCTIONS = "instructions"

_AI = r"(?:ai|a\.i\.|llms?|large\s+language\s+models?|language\s+models?|chatbots?|ai\s+assistants?|ai\s+agents?)"
INSTRUCTION_PATTERNS = (
    # "ignore all previous instructions", "disregard the above prompt", "forget your prior rules"
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:(?:the|your|of\s+the|these)\s+)?"
    r"(?:previous|prior|above|earlier|preceding|former|system|original)\s+"
    r"(?:instructions?|prompts?|messages?|directions?|directives?|rules|guidelines|context)\b",
    # "you are an AI", "you are now a large language model", "if you are an AI assistant"
    rf"\byou\s+are\s+(?:now\s+)?(?:an?\s+)?{_AI}\b",
    # "AI assistants must…", "LLMs should…", "language models reading this are instructed to…"
    rf"\b{_AI}\s+(?:(?:reading|processing|summari[sz]ing)\s+(?:this|these)\s+\w+\s+)?"
    r"(?:must|should|shall|need\s+to|are\s+(?:required|instructed|asked)\s+to)\b",
    # "note to AI assistants", "instructions for the language model", "message for LLMs"
    rf"\b(?:notes?|messages?|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_AI}",
    r"\bsystem\s+prompt\b",
    r"\bdo\s+not\s+(?:tell|inform|reveal\s+(?:this\s+)?to|mention\s+(?:this\s+)?to)\s+the\s+user\b",
)
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in INSTRUCTION_PATTERNS), re.I)


def passage_flags(text: str) -> tuple[str, ...]:
    """The flags of a passage's text: `instructions` when it addresses an AI assistant; () for most."""
    return (INSTRUCTIONS,) if _INSTRUCTION.search(text) else ()
