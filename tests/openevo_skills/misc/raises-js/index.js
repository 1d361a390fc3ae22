export async function execute (input) {
  throw new TypeError(`no good: ${input.text}`)
}
