"""memory_store: ctx.memory.store, then the text appended to the session, its key to scratch."""


def execute(input, ctx):
    meta = {"path": input["path"]} if "path" in input else None
    key = ctx.memory.store(input["text"], input.get("key"), meta)["key"]
    ctx.session.append("user", input["text"])
    ctx.scratch["last_key"] = key
    return {"key": key, "session_id": ctx.session.id, "messages": len(ctx.session.history())}
