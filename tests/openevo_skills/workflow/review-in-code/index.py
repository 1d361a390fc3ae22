def execute(input, ctx):
    review = ctx.call("code_review", {"code": input["code"]})
    return {"summary": review["summary"]}
