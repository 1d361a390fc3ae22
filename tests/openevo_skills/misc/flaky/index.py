import os


def execute(input, ctx):
    path = input["counter_file"]
    calls = (int(open(path).read()) if os.path.exists(path) else 0) + 1
    with open(path, "w") as fh:
        fh.write(str(calls))
    if calls <= input["fail_times"]:
        raise RuntimeError(f"call {calls} fails on purpose")
    return {"calls": calls}
