"""word_stats: words, sentences and the most frequent words (longer than three letters)."""

import re
from collections import Counter


def execute(input, ctx):
    text = input["text"]
    words = re.findall(r"[A-Za-z']+", text.lower())
    sentences = [s for s in re.split(r"[.!?]+", text) if s.strip()]
    ctx.log("counted", len(words), "words")
    frequent = Counter(w for w in words if len(w) > 3).most_common(int(input["top"]))
    return {
        "words": len(words),
        "sentences": len(sentences),
        "top_words": [{"word": w, "count": n} for w, n in frequent],
    }
