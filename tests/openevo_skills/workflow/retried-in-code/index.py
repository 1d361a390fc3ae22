def execute(input, ctx):
    return ctx.call("flaky", {"counter_file": input["counter_file"], "fail_times": input["fail_times"]})
