def execute(input, ctx):
    found = ctx.call("memory_search", {"query": input["topic"], "limit": 10})
    text = "\n\n".join(r["snippet"] for r in found["results"])
    summary = ctx.call("summarize", {"text": text})
    try:
        ctx.call("sleep_ms", {"ms": 1})  # not in `calls`: refused
    except RuntimeError as exc:
        ctx.log("refused:", exc)
    return {"summary": summary["summary"], "sources": found["results"]}
