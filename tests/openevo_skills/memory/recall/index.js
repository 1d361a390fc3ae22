// memory_recall: ctx.memory and ctx.session from JavaScript; reads what memory_store left in scratch
export async function execute (input, ctx) {
  const forgotten = input.forget ? (await ctx.memory.forget(input.forget)).forgotten : undefined
  return {
    results: await ctx.memory.search(input.query, 5),
    history: await ctx.session.history(),
    session_id: ctx.session.id,
    last_key: ctx.scratch.last_key ?? null,
    entries: (await ctx.memory.list(100)).length,
    ...(forgotten === undefined ? {} : { forgotten })
  }
}
