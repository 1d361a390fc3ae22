export async function execute (input, ctx) {
  if (input.text === 'memory') return ctx.memory.search('x')
  return { text: input.text.toUpperCase() }
}
