def execute(input, ctx):
    print("about to fail")
    raise ValueError(f"no good: {input['text']}")
