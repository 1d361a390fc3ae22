"""A fake LLM server for testing real agent CLIs offline.

It speaks OpenAI Responses, OpenAI Chat Completions, Gemini and Anthropic Messages, and answers
by a stateless script rule (see `fake_llm.script`).
"""

from __future__ import annotations

from fake_llm.script import Script, ToolCall
from fake_llm.server import FakeLLM, RecordedRequest

__all__ = ["FakeLLM", "RecordedRequest", "Script", "ToolCall"]
