/**
 * @module bin/host/model-server
 *
 * Contract: `startModelServer(script)` listens on 127.0.0.1 (a free port) and
 * plays an OpenAI-compatible chat-completions API (DeepSeek's wire shape) for
 * a real DSH host: the scripted model of `dsh-fold try` and of the test harness. POST `/chat/completions` or `/v1/chat/completions`:
 *
 * - Every request body is recorded, in arrival order, in `requests` (its
 *   headers at the same index in `headers`), before validation.
 * - The message list is VALIDATED like the real API: each assistant
 *   `tool_calls` entry must be answered by a `tool` message with that
 *   `tool_call_id` before the next non-tool message (or the end), and a `tool`
 *   message must answer a call of the assistant message just before it. A
 *   violation is recorded in `violations` as `{index, message}` and answered
 *   with HTTP 400 `{error:{message, type:'invalid_request_error', code}}`; the
 *   script is not called for it.
 * - Otherwise `await script(body, index)` (index counts every request) gives
 *   the reply `{content?, reasoning?, toolCalls?: [{id?, name, arguments}],
 *   finish?, usage?}`, streamed as SSE `chat.completion.chunk`s (reasoning,
 *   then content, then tool calls, then a finish chunk carrying `usage`, then
 *   `data: [DONE]`). `arguments` may be a string or a value (JSON-encoded).
 *   `finish` defaults to `tool_calls` when there are calls, else `stop`.
 *   A reply `{httpStatus, error}` answers with that status and error text
 *   instead. A reply with `hang: true` streams its chunks but never finishes: no finish
 *   chunk, no `[DONE]`, the response left open (a model stalled mid-answer) until `close()`.
 *   A script that throws gets a 500 and lands in `violations` too.
 *
 * The host also asks the same endpoint for a session title (no tools, small
 * `max_tokens`): `isTitleRequest(body)` tells those apart, and
 * `sequence(replies, {title})` builds a script that answers title requests
 * with `title` and walks `replies` (values or `(body, n) => reply`) for the
 * rest, failing loudly when the model is asked more than it was scripted for.
 * `close()` stops the server and drops open connections.
 */
import { createServer } from 'node:http'

/** Largest `max_tokens` a title request asks for (the host's title row uses 64). */
const TITLE_MAX_TOKENS = 256

/** @param {any} body a recorded request body @returns {boolean} */
export function isTitleRequest (body) {
  return !(body?.tools?.length > 0) && typeof body?.max_tokens === 'number' && body.max_tokens <= TITLE_MAX_TOKENS
}

/**
 * A script answering title requests with `title` and the others, in order, from `replies`.
 * @param {Array<object|Function>} replies @param {{title?: string}} [options]
 */
export function sequence (replies, { title = 'Scripted session' } = {}) {
  let n = 0
  return (body, index) => {
    if (isTitleRequest(body)) return { content: title }
    const step = replies[n++]
    if (step === undefined) throw new Error(`model script exhausted: request ${index} is model call ${n} of ${replies.length} scripted`)
    return typeof step === 'function' ? step(body, n - 1) : step
  }
}

/** The real API's pairing rule over one message list; returns the first violation's text or undefined. */
export function pairingViolation (messages) {
  if (!Array.isArray(messages)) return 'messages must be an array'
  let open = new Set()
  for (const [i, m] of messages.entries()) {
    if (m?.role === 'tool') {
      if (!open.delete(m.tool_call_id)) return `messages[${i}]: tool message with tool_call_id ${JSON.stringify(m.tool_call_id)} does not answer a tool call of the preceding assistant message`
      continue
    }
    if (open.size > 0) return `messages[${i}]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (unanswered: ${[...open].join(', ')})`
    open = new Set((m?.role === 'assistant' ? m.tool_calls ?? [] : []).map((c) => c.id))
  }
  if (open.size > 0) return `end of messages: tool calls without tool messages (unanswered: ${[...open].join(', ')})`
}

const estimateTokens = (text) => Math.max(1, Math.ceil(text.length / 4))

/** The SSE data payloads of one reply. */
function chunksOf (reply, body, id) {
  const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model ?? 'scripted' }
  const delta = (d, finish = null) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] })
  const out = [delta({ role: 'assistant', content: '' })]
  if (reply.reasoning) out.push(delta({ reasoning_content: reply.reasoning }))
  if (reply.content) out.push(delta({ content: reply.content }))
  const calls = reply.toolCalls ?? []
  calls.forEach((call, index) => {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {})
    const callId = call.id ?? `call_${id}_${index}`
    out.push(delta({ tool_calls: [{ index, id: callId, type: 'function', function: { name: call.name, arguments: '' } }] }))
    out.push(delta({ tool_calls: [{ index, function: { arguments: args } }] }))
  })
  const produced = (reply.reasoning ?? '') + (reply.content ?? '') + JSON.stringify(calls)
  const prompt = estimateTokens(JSON.stringify(body.messages ?? []))
  const usage = reply.usage ?? {
    prompt_tokens: prompt, completion_tokens: estimateTokens(produced), total_tokens: prompt + estimateTokens(produced),
    prompt_cache_hit_tokens: 0, prompt_cache_miss_tokens: prompt,
  }
  out.push({ ...delta({}, reply.finish ?? (calls.length > 0 ? 'tool_calls' : 'stop')), usage })
  return out
}

/**
 * @param {(body: any, index: number) => object | Promise<object>} script
 * @returns {Promise<{url: string, requests: any[], headers: object[], violations: {index: number, message: string}[], close(): Promise<void>}>}
 */
export async function startModelServer (script) {
  const requests = []
  const headers = []
  const violations = []
  const fail = (res, status, message, code = 'invalid_request_error') => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }))
  }
  const server = createServer(async (req, res) => {
    const chunks = []
    for await (const chunk of req) chunks.push(chunk)
    if (req.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(req.url)) return fail(res, 404, `no route ${req.method} ${req.url}`, 'not_found')
    let body
    try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')) } catch (e) { return fail(res, 400, `bad JSON: ${e.message}`) }
    const index = requests.push(body) - 1
    headers.push(req.headers)
    const bad = pairingViolation(body.messages)
    if (bad) { violations.push({ index, message: bad }); return fail(res, 400, bad) }
    let reply
    try { reply = await script(body, index) } catch (e) {
      violations.push({ index, message: `script failed: ${e.message}` })
      return fail(res, 500, `model script failed: ${e.message}`, 'server_error')
    }
    if (reply?.httpStatus) return fail(res, reply.httpStatus, reply.error ?? 'scripted error', 'scripted')
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const payloads = chunksOf(reply ?? {}, body, `cmpl-${index}`)
    for (const payload of reply?.hang ? payloads.slice(0, -1) : payloads) res.write(`data: ${JSON.stringify(payload)}\n\n`)
    if (!reply?.hang) res.end('data: [DONE]\n\n')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    headers,
    violations,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}
