def execute(input, ctx):
    return {"echo": "a" * 40 + "!"}  # its own schema's pattern cannot refuse it in time
