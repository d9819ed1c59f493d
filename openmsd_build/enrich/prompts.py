"""The OpenMSD paper's two summarization prompts, with stable ids.

A prompt's id is its name plus the first 8 hex digits of the sha1 of its exact wording
(`summary30@1a2b3c4d`): the id is part of the cache key, so editing a prompt's text can
never serve answers that were generated for the old wording.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    instruction: str
    max_new_tokens: int  # generation cap sent to the endpoint (LLM tokens), above the word cut

    @property
    def id(self) -> str:
        digest = hashlib.sha1(f"{self.system}\n{self.instruction}".encode()).hexdigest()[:8]
        return f"{self.name}@{digest}"

    def user_message(self, title: str | None, abstract: str | None) -> str:
        parts = [self.instruction, ""]
        if title:
            parts.append(f"Title: {title.strip()}")
        if abstract:
            parts.append(f"Abstract: {abstract.strip()}")
        return "\n".join(parts)


SYSTEM = "You are a careful scientific assistant. You always answer in English, with no preamble."

PROMPTS: dict[str, Prompt] = {
    p.name: p
    for p in (
        # Prompt 1 of the paper: a short English summary.
        Prompt(
            "summary30",
            SYSTEM,
            "Summarize the following scientific paper in English in at most 30 words. "
            "Answer with the summary only.",
            96,
        ),
        # Prompt 2 of the paper: the three most important findings, translated to English.
        Prompt(
            "findings3",
            SYSTEM,
            "List the three most important findings of the following scientific paper, translated into "
            "English. Answer in English only, one short sentence per finding, nothing else.",
            192,
        ),
    )
}
DEFAULT_PROMPT = "summary30"


def prompt(name: str) -> Prompt:
    """The prompt called `name` (KeyError lists the known names)."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; prompts are {', '.join(PROMPTS)}") from None
