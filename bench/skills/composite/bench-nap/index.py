import time


def execute(input, ctx):
    time.sleep(input["ms"] / 1000)
    return {"tag": input.get("tag", "")}
