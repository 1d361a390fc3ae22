def execute(input, ctx):
    return ctx.call("sleep_ms", {"ms": 20000})
