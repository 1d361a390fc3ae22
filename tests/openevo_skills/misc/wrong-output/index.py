def execute(input, ctx):
    if input.get("nan"):  # a float JSON has no spelling for
        return {"count": float("nan")}
    return {"count": "three"}
