def execute(input, ctx):
    return {"n": input["n"] + 1}
