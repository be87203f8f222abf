"""The workshop surface's quiz facilitation protocol (docs/workshops.md, "A quiz session"): static, Thoth's
own writing, grounded in retrieval practice (the testing effect, prompt feedback, self-explanation, spacing
and interleaving, confidence ratings)."""

from __future__ import annotations

from dataclasses import dataclass

from thoth.errors import ClientError

VERSION = "1"
DEFAULT_QUESTION_COUNT = 8
MAX_QUESTION_COUNT = 20


@dataclass(frozen=True)
class QuestionType:
    id: str
    label: str
    prompt_template: str
    listen_for: tuple[str, ...]
    follow_ups: tuple[str, ...]


@dataclass(frozen=True)
class QuizInstructions:
    topic: str | None
    learner_goal: str | None
    question_count: int
    markdown: str
    checklist: tuple[str, ...]
    question_types: tuple[QuestionType, ...]
    closing_steps: tuple[str, ...]
    version: str = VERSION


QUESTION_TYPES: tuple[QuestionType, ...] = (
    QuestionType(
        id="recall",
        label="Free recall",
        prompt_template="Without looking back: what is {concept}, and what problem does it solve?",
        listen_for=(
            "the idea in the learner's own words, not a recited definition",
            "the problem it exists to solve",
            "a missing or wrong key term",
        ),
        follow_ups=(
            "Can you give me an example where you would use it?",
            "What would go wrong without it?",
        ),
    ),
    QuestionType(
        id="explain-why",
        label="Explain why",
        prompt_template="Why does {behaviour} happen? Walk me through the reasoning step by step.",
        listen_for=(
            "a cause-and-effect chain rather than a restatement of the behaviour",
            "each step following from the one before",
            "the point where the explanation turns vague: probe there",
        ),
        follow_ups=(
            "What is the step between those two that you skipped?",
            "How would you convince a colleague who doubts it?",
        ),
    ),
    QuestionType(
        id="predict-output",
        label="Predict the outcome",
        prompt_template="Here is a short piece of code or a scenario: {snippet}. What happens when it runs, and why?",
        listen_for=(
            "a concrete prediction made before any explanation",
            "the rule the prediction rests on",
            "surprise at the real outcome: a sign the mental model needs a fix",
        ),
        follow_ups=(
            "What single change would make it behave differently?",
            "Which line decides the outcome?",
        ),
    ),
    QuestionType(
        id="spot-the-bug",
        label="Find the mistake",
        prompt_template="This attempt at {task} has a mistake: {snippet}. Where is it, and how would you fix it?",
        listen_for=(
            "the right location of the fault",
            "why it is a fault, not only that it is one",
            "a fix that does not introduce a new problem",
        ),
        follow_ups=(
            "How would a test catch this?",
            "Is there a second, subtler problem?",
        ),
    ),
    QuestionType(
        id="compare",
        label="Compare and contrast",
        prompt_template="How do {a} and {b} differ, and when would you choose one over the other?",
        listen_for=(
            "at least one real difference in behaviour or cost",
            "a situation where each is the better choice",
            "similarities mistaken for differences (or the reverse)",
        ),
        follow_ups=(
            "What would you lose by always using {a}?",
            "Is there a case where neither fits?",
        ),
    ),
    QuestionType(
        id="apply",
        label="Apply to a new case",
        prompt_template="Suppose {new_situation}. How would you use what you learned about {concept} here?",
        listen_for=(
            "transfer of the idea to a setting the material did not show",
            "constraints of the new case that change the answer",
            "a plan concrete enough to start on",
        ),
        follow_ups=(
            "What is the first thing you would check?",
            "Where could this approach break down?",
        ),
    ),
)

CHECKLIST: tuple[str, ...] = (
    "Fetch the source material first (retrieve_learning_context, or search_topic_context then its scope) "
    "and write questions only from what it says.",
    "Ask exactly one question per message, then stop and wait for the answer.",
    "Before giving feedback, ask how confident the learner is (sure / unsure / guessing).",
    "Give feedback right after each answer: confirm what is right, then correct what is not, kindly and precisely.",
    "Ask the learner to explain their reasoning at least every other question.",
    "Mix question types, and return to earlier ideas later in the session instead of asking them back to back.",
    "Keep a running tally of which ideas were solid and which were shaky.",
    "Stop at the target number of questions unless the learner asks for more.",
    "End with a recap and a suggestion for when to review.",
)

CLOSING_STEPS: tuple[str, ...] = (
    "Summarise in three to five bullets what the learner clearly knows.",
    "Name the one or two ideas that were shaky, each with a pointer to the section of the material that covers it.",
    "Ask the learner to state the most important idea of the session in one sentence, in their own words.",
    "Suggest a review: the shaky ideas again tomorrow, the whole topic again in about a week.",
    "Offer a short follow-up quiz on the shaky ideas only.",
)


def _protocol(topic: str | None, goal: str | None, count: int) -> str:
    subject = f"**{topic}**" if topic else "the topic the learner chooses (ask for it first if it is not clear)"
    lines = [
        "# Quiz facilitation protocol",
        "",
        f"You are running a retrieval-practice quiz on {subject}: about **{count}** questions, asked one at a time.",
    ]
    if goal:
        lines.append(f"The learner's goal: *{goal}*. Choose and order the questions so they serve it.")
    lines += [
        "Recalling an answer builds memory far better than rereading it, so the learner does the remembering; "
        "you ask, listen and give feedback.",
        "",
        "## Before the first question",
        "",
        "1. Fetch the material: `retrieve_learning_context` for a known scope, or `search_topic_context` to find "
        "where the topic is taught and then its scope. Base every question and every correction on that text.",
        "2. Say in one sentence what the quiz covers and how many questions to expect.",
        "",
        "## For each question",
        "",
        "1. **Ask one question and stop.** Never put two questions, or the answer, in the same message.",
        "2. **Wait** for the learner's answer. If they are stuck, offer a small hint rather than the answer.",
        "3. **Ask for confidence**: sure, unsure or guessing. "
        "A confident wrong answer is the most useful thing to find.",
        "4. **Probe the reasoning**: ask *why* or *how they know*, especially when the answer is right but brief.",
        "5. **Correct gently and precisely**: say what was right first, then what was missing or wrong and why, "
        "quoting or pointing to the material (file and section).",
        "6. Note whether the idea was solid or shaky, then move on.",
        "",
        "## Across the session",
        "",
        "- **Vary the question types** (recall, explain why, predict, find the mistake, compare, apply).",
        "- **Interleave**: alternate between ideas instead of drilling one idea several times in a row.",
        "- **Space**: bring a shaky idea back a few questions later, asked a different way.",
        "- Start a little below the learner's level and raise the difficulty as answers come easily; "
        "effortful recall is the point, but repeated failure is discouraging.",
        "- Keep your own messages short: the learner should do most of the talking.",
        "",
        "## Ending",
        "",
        "Finish with a recap: what the learner knows well, what to review (with pointers to the material), "
        "one sentence in their own words, and when to review next.",
    ]
    return "\n".join(lines)


def _optional_text(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise ClientError(f"{name} must not be blank: leave it out, or give some text", argument=name)
    return text


def quiz_instructions(topic: str | None, learner_goal: str | None, count: int) -> QuizInstructions:
    """The protocol, checklist, question types and closing steps, tailored to the topic, goal and length."""
    if not 1 <= count <= MAX_QUESTION_COUNT:
        raise ClientError(
            f"questionCount must be between 1 and {MAX_QUESTION_COUNT}, got {count}", argument="questionCount"
        )
    topic = _optional_text("topic", topic)
    goal = _optional_text("learnerGoal", learner_goal)
    return QuizInstructions(
        topic=topic,
        learner_goal=goal,
        question_count=count,
        markdown=_protocol(topic, goal, count),
        checklist=CHECKLIST,
        question_types=QUESTION_TYPES,
        closing_steps=CLOSING_STEPS,
    )
