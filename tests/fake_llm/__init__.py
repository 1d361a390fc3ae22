"""A fake LLM server for testing real agent CLIs offline.

It speaks OpenAI Responses, OpenAI Chat Completions, Gemini and Anthropic Messages, and answers
by a stateless script rule (see `tests.fake_llm.script`).
"""
from __future__ import annotations

from tests.fake_llm.script import Script, ToolCall
from tests.fake_llm.server import FakeLLM, RecordedRequest

__all__ = ["FakeLLM", "RecordedRequest", "Script", "ToolCall"]
