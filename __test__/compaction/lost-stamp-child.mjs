// One process's part of the lost-stamp scenario (`lost-stamp.mjs`): boots a real host on the
// checkpoint store file, takes the session (fresh, or restored from the log a previous process
// wrote: a restart), runs the phases asked for, writes the session's log for the next process
// and prints the phases' answers and the scenario's facts as one JSON line.
//   node lost-stamp-child.mjs '{"backend":"fold","store":"…","phases":["fold"],"logIn":null,"logOut":"…"}'
import { readFileSync, writeFileSync } from 'node:fs'

import { agentFor, boot, facts, phase } from './lost-stamp.mjs'

const { backend, store, phases, logIn, logOut } = JSON.parse(process.argv[2])
const { root } = await boot(backend, store)
const agent = await agentFor(root, logIn ? JSON.parse(readFileSync(logIn, 'utf8')) : undefined)
/** @type {Record<string, any>} */
const answers = {}
for (const name of phases) answers[name] = await phase(name, { root, agent, store })
await agent.whenIdle()
writeFileSync(logOut, JSON.stringify(agent.session.events))
process.stdout.write(`${JSON.stringify({ answers, facts: await facts(root, agent.session) })}\n`)
await root.dispose?.()
process.exit(0)
