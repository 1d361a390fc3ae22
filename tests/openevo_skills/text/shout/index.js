export async function execute (input, ctx) {
  if (input.text === 'call') return ctx.call('summarize', { text: 'x' })
  return { text: input.text.toUpperCase() }
}
