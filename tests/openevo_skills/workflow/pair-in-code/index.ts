// two calls in flight at once; a failing call is an exception the composite can catch
interface Ctx { call: (name: string, input: unknown) => Promise<any> }

export async function execute (input: { ms?: number }, ctx: Ctx) {
  const ms = input.ms ?? 1500
  const [a, b] = await Promise.all([
    ctx.call('sleep_ms', { ms, tag: 'A' }),
    ctx.call('sleep_ms', { ms, tag: 'B' })
  ])
  let failure = ''
  try {
    await ctx.call('wrong_output', {})
  } catch (err) {
    failure = String((err as Error).message)
  }
  return { a, b, failure }
}
