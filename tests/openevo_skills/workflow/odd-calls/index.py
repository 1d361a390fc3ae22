def execute(input, ctx):
    answers = {}
    for label, value in (("array", [1, 2]), ("empty_text", ""), ("number", 5), ("none", None)):
        try:
            answers[label] = ctx.call("sleep_ms", value)
        except RuntimeError as exc:
            answers[label] = f"refused: {exc}"
    return answers
