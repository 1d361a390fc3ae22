// Run `execute(input, ctx)` of a skill.json code skill written in JavaScript or TypeScript
// (index.js / index.ts, the latter under the pinned tsx runner). The same contract as
// harness.py: input from SKILL_RUNNER_INPUT_FILE, the return value as JSON to
// SKILL_RUNNER_RESULT_FILE, console output to stderr.
import { readFileSync, writeFileSync, mkdirSync, existsSync, renameSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

// Requests to the worker as files in the run's calls/ folder (the box keeps the script off the
// network and the database): ctx.call as calls/<n>.request.json (composites only), ctx.memory,
// ctx.session and ctx.scratch as calls/op-<n>.request.json; the worker answers each with the
// matching .response.json. Outside the service (no SKILL_RUNNER_RUN_DIR) nothing answers.
const runDir = process.env.SKILL_RUNNER_RUN_DIR || ''
const channel = join(runDir, 'calls')
let calls = 0
let ops = 0

async function request (base, body, pollMs) {
  mkdirSync(channel, { recursive: true })
  writeFileSync(`${base}.request.tmp`, JSON.stringify(body))
  renameSync(`${base}.request.tmp`, `${base}.request.json`)
  while (!existsSync(`${base}.response.json`)) await new Promise((resolve) => setTimeout(resolve, pollMs))
  return JSON.parse(readFileSync(`${base}.response.json`, 'utf8'))
}

async function op (name, args = {}) {
  if (!runDir) throw new Error(`ctx.${name} needs the service: run the skill through it`)
  const answer = await request(join(channel, `op-${++ops}`), { op: name, args }, 5)
  if (!answer.ok) throw new Error(`ctx.${name}: ${answer.error?.message}`)
  return answer.output
}

async function call (name, input) {
  if (!runDir) throw new Error(`ctx.call('${name}'): only a composite skill calls other skills`)
  const answer = await request(join(channel, String(++calls)), { name, input: input ?? {} }, 20)
  if (!answer.ok) throw new Error(`ctx.call('${name}') failed: ${answer.error?.message || 'failed'}`)
  return answer.output
}

// ctx.scratch and ctx.session.id are plain properties, fetched on first use: a synchronous wait
let opened = null
const pause = new Int32Array(new SharedArrayBuffer(4))
function openSync () {
  if (opened) return opened
  if (!runDir) return (opened = { scratch: {}, session_id: '' })
  mkdirSync(channel, { recursive: true })
  const base = join(channel, `op-${++ops}`)
  writeFileSync(`${base}.request.tmp`, JSON.stringify({ op: 'open', args: {} }))
  renameSync(`${base}.request.tmp`, `${base}.request.json`)
  while (!existsSync(`${base}.response.json`)) Atomics.wait(pause, 0, 0, 5)
  const answer = JSON.parse(readFileSync(`${base}.response.json`, 'utf8'))
  if (!answer.ok) throw new Error(`ctx.scratch: ${answer.error?.message}`)
  opened = { ...answer.output, start: JSON.stringify(answer.output.scratch) }
  return opened
}

async function main (index) {
  const payload = JSON.parse(readFileSync(process.env.SKILL_RUNNER_INPUT_FILE, 'utf8'))
  // console.log and friends go to the log, never into the result
  for (const level of ['log', 'info', 'debug']) console[level] = (...args) => console.error(...args)
  let scratch = null
  const ctx = {
    runId: process.env.SKILL_RUNNER_RUN_ID || '',
    config: {},
    get scratch () { return scratch ?? (scratch = openSync().scratch) },
    set scratch (value) { openSync(); scratch = value },
    log: (...args) => console.error('[skill]', ...args),
    memory: {
      store: (text, key, meta) => op('memory.store', { text, key: key ?? null, meta: meta ?? null }),
      get: (key) => op('memory.get', { key }),
      forget: (key) => op('memory.forget', { key }),
      list: (limit = 20) => op('memory.list', { limit }),
      search: (query, limit = 5) => op('memory.search', { query, limit })
    },
    session: {
      get id () { return openSync().session_id },
      history: (limit = 50) => op('session.history', { limit }),
      append: (role, content) => op('session.append', { role, content }),
      clear: () => op('session.clear')
    },
    call: (name, input) => call(name, input)
  }
  const mod = await import(pathToFileURL(resolve(index)).href)
  const execute = mod.execute ?? mod.default?.execute ?? mod.default
  if (typeof execute !== 'function') throw new Error(`${index} exports no function execute(input, ctx)`)
  const value = await execute(payload.input ?? {}, ctx)
  const resultFile = process.env.SKILL_RUNNER_RESULT_FILE
  mkdirSync(dirname(resultFile), { recursive: true })
  writeFileSync(resultFile, JSON.stringify(value === undefined ? null : value))
  // a changed scratch goes back to the worker, which merges it by key
  if (runDir && scratch !== null && JSON.stringify(scratch) !== opened.start) await op('scratch.put', { scratch })
}

main(process.argv[2]).catch((err) => {
  console.error(err && err.stack ? err.stack : String(err))
  // what execute threw, for the run's error message (result/error.json; best effort)
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
  if (process.env.SKILL_RUNNER_RESULT_FILE) {
    try {
      const folder = dirname(process.env.SKILL_RUNNER_RESULT_FILE)
      mkdirSync(folder, { recursive: true })
      writeFileSync(join(folder, 'error.json'), JSON.stringify({ message }))
    } catch {}
  }
  process.exit(1)
})
