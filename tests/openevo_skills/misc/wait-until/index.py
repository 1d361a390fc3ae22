import time


def execute(input, ctx):
    time.sleep(max(0.0, input["at"] - time.time()))
    return {"tag": input["tag"]}
