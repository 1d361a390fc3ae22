import os
import time


def execute(input, ctx):
    ctx.log(f"pid {os.getpid()}")
    started = time.time()
    time.sleep(input["ms"] / 1000)
    return {"started": started, "ended": time.time(), "tag": input["tag"]}
