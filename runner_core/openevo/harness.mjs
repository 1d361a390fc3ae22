// Run `execute(input, ctx)` of a skill.json code skill written in JavaScript or TypeScript
// (index.js / index.ts, the latter under the pinned tsx runner). The same contract as
// harness.py: input from SKILL_RUNNER_INPUT_FILE, the return value as JSON to
// SKILL_RUNNER_RESULT_FILE, console output to stderr.
import { readFileSync, writeFileSync, mkdirSync, existsSync, renameSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const unavailable = (name) => new Proxy({}, {
  get (_target, attr) {
    if (attr === 'then') return undefined // not a thenable
    throw new Error(`ctx.${name} is not available in this service (ctx.${name}.${String(attr)})`)
  }
})

// ctx.call: the request as calls/<n>.request.json in the run directory, the worker's answer
// as calls/<n>.response.json once the child run ended (composites only)
let calls = 0
async function call (name, input) {
  const dir = join(process.env.SKILL_RUNNER_RUN_DIR || '', 'calls')
  if (!existsSync(dir)) throw new Error(`ctx.call('${name}'): only a composite skill calls other skills`)
  const base = join(dir, String(++calls))
  writeFileSync(`${base}.request.tmp`, JSON.stringify({ name, input: input ?? {} }))
  renameSync(`${base}.request.tmp`, `${base}.request.json`)
  while (!existsSync(`${base}.response.json`)) await new Promise((resolve) => setTimeout(resolve, 20))
  const answer = JSON.parse(readFileSync(`${base}.response.json`, 'utf8'))
  if (!answer.ok) throw new Error(`ctx.call('${name}') failed: ${answer.error?.message || 'failed'}`)
  return answer.output
}

async function main (index) {
  const payload = JSON.parse(readFileSync(process.env.SKILL_RUNNER_INPUT_FILE, 'utf8'))
  const scratchFile = process.env.SKILL_RUNNER_SCRATCH_FILE || ''
  const scratch = scratchFile && existsSync(scratchFile) ? JSON.parse(readFileSync(scratchFile, 'utf8')) : {}
  // console.log and friends go to the log, never into the result
  for (const level of ['log', 'info', 'debug']) console[level] = (...args) => console.error(...args)
  const ctx = {
    runId: process.env.SKILL_RUNNER_RUN_ID || '',
    config: {},
    scratch,
    log: (...args) => console.error('[skill]', ...args),
    memory: unavailable('memory'),
    session: unavailable('session'),
    call: (name, input) => call(name, input)
  }
  const mod = await import(pathToFileURL(resolve(index)).href)
  const execute = mod.execute ?? mod.default?.execute ?? mod.default
  if (typeof execute !== 'function') throw new Error(`${index} exports no function execute(input, ctx)`)
  const value = await execute(payload.input ?? {}, ctx)
  const resultFile = process.env.SKILL_RUNNER_RESULT_FILE
  mkdirSync(dirname(resultFile), { recursive: true })
  writeFileSync(resultFile, JSON.stringify(value === undefined ? null : value))
  if (scratchFile) writeFileSync(scratchFile, JSON.stringify(ctx.scratch))
}

main(process.argv[2]).catch((err) => {
  console.error(err && err.stack ? err.stack : String(err))
  process.exit(1)
})
