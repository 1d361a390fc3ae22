"""keyword_lines: the sentences that mention a keyword, in the text's order."""

import re


def execute(input, ctx):
    keywords = {k.lower() for k in input["keywords"]}
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", input["text"]) if s.strip()]
    lines = [s for s in sentences if keywords & set(re.findall(r"[a-z']+", s.lower()))]
    return {"lines": lines}
