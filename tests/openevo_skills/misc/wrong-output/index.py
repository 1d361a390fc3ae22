def execute(input, ctx):
    return {"count": "three"}
