/**
 * @module plugin/recall/words
 * Every text the recall row writes for the model, in English and Chinese, from its configured
 * tool name: the tool's description and parameters, the answer's headings and notes, and each
 * failure's text (`CODE: what happened; what to do`). Values the model sent, ids and the folded
 * lines themselves are quoted as they are.
 */

const EN = {
  description:
    'Read back the exact original lines of work that a fold, a block summary or a compaction removed from your context: tool outputs, call arguments, your own text, user messages. Give `query` (a substring; smart case) or `/regex/flags` to get the matching lines with their seq and tool; omit it for an index of the folded messages. `fold` picks one fold by its checkpoint id (or "latest"), `block` one block summary by block id, `compaction` one compaction by its id (or "latest"); none of them searches everything folded. `around` adds context lines. Reads only this session.',
  params: {
    fold: 'A checkpoint id whose fold to read, or "latest". Omit to search every folded region.',
    block: 'A block id whose summary to read (block mode).',
    compaction: 'A compaction id (a checkpoint\'s recall line names it) or "latest".',
    query: 'A substring (case-insensitive unless it has an uppercase letter) or /regex/flags (flag i). Omit for an index.',
    around: (/** @type {number} */ max) => `Context lines before and after each matching line, 0 to ${max} (default 0).`,
  },
  region: {
    fold: (/** @type {number} */ id) => `fold ${id}`,
    block: (/** @type {string} */ ids) => `block ${ids || '(no ids)'}`,
    compaction: (/** @type {string} */ id) => `compaction ${id}`,
  },
  label: {
    text: 'assistant text',
    reasoning: 'assistant reasoning',
    call: (/** @type {string} */ tool) => `${tool} call`,
    result: (/** @type {string} */ tool, /** @type {boolean} */ error) => `${tool} result${error ? ' (error)' : ''}`,
    user: 'user message',
    other: (/** @type {string} */ who) => `${who} message`,
  },
  heading: (/** @type {string} */ name, /** @type {number} */ n, /** @type {string} */ span, /** @type {number} */ chars) => `${name}: ${n} folded message${n === 1 ? '' : 's'}${span}, ${chars} chars`,
  span: (/** @type {number} */ a, /** @type {number} */ b) => `, seq ${a}..${b}`,
  indexLine: (/** @type {string} */ label, /** @type {number} */ lines, /** @type {number} */ chars, /** @type {string} */ first) => `${label} (${lines} line${lines === 1 ? '' : 's'}, ${chars} chars): ${first}`,
  indexMore: (/** @type {number} */ n, /** @type {number} */ max) => `… ${n} more folded message${n === 1 ? '' : 's'} not listed (answer limit ${max} chars): pick one fold or block, or search with query.`,
  indexEnd: 'Search them with query (a substring, or /regex/) to get their exact lines.',
  regions: (/** @type {number} */ n) => `${n} folded regions`,
  found: (/** @type {number} */ n, /** @type {string} */ where, /** @type {string} */ query) => `${n} line${n === 1 ? '' : 's'} in ${where} match ${query}${n ? ':' : '.'}`,
  searchMore: (/** @type {number} */ n, /** @type {number} */ max) => `… ${n} more matching line${n === 1 ? '' : 's'} not shown (answer limit ${max} chars): narrow the query, or pick one fold or block.`,
  errors: {
    notObject: 'the arguments must be an object {fold?, block?, compaction?, query?, around?}.',
    unknownArgs: (/** @type {number} */ n, /** @type {string} */ list) => `unknown argument${n > 1 ? 's' : ''} ${list}; use fold, block, compaction, query, around.`,
    fold: (/** @type {string} */ got) => `fold must be a mark id (a positive integer) or "latest", got ${got}.`,
    block: (/** @type {string} */ got) => `block must be a non-empty block id, got ${got}.`,
    blockLength: (/** @type {string} */ got, /** @type {number} */ n, /** @type {number} */ max) => `block ${got} is ${n} characters long; a block id has at most ${max}.`,
    compaction: (/** @type {string} */ got) => `compaction must be a compaction id or "latest", got ${got}.`,
    several: 'give one of fold, block and compaction, not several.',
    query: (/** @type {string} */ got) => `query must be a non-empty string (a substring or /regex/), got ${got}.`,
    around: (/** @type {number} */ max, /** @type {string} */ got) => `around must be an integer from 0 to ${max}, got ${got}.`,
    badQuery: (/** @type {string} */ detail) => `${detail}`,
    nothing: 'nothing in this session has been folded yet, so there is nothing to recall; everything is still in your context.',
    onlyBlocks: (/** @type {string} */ ids, /** @type {string} */ tool) => `this session has no checkpoint folded yet (only block summaries: ${ids}); call ${tool} with {"block": id}.`,
    foreign: (/** @type {number} */ id, /** @type {string} */ tool, /** @type {string} */ here) => `checkpoint mark ${id} belongs to another session; ${tool} reads only this session's folds (${here}).`,
    foldsHere: (/** @type {string} */ ids) => `folds here: ${ids}`,
    noneFolded: 'none folded here yet',
    notFolded: (/** @type {number} */ id, /** @type {string} */ rewind) => `checkpoint mark ${id} of this session has not been folded yet (call ${rewind} first)`,
    noFold: (/** @type {number} */ id) => `this session has no fold of checkpoint mark ${id}`,
    unknownFold: (/** @type {string} */ why, /** @type {string} */ here) => `${why}; ${here}.`,
    noFoldHere: 'no checkpoint folded here yet',
    unknownCompaction: (/** @type {string} */ got, /** @type {string} */ known) => `this session has no compaction ${got}; ${known}.`,
    compactionsHere: (/** @type {string} */ ids) => `compactions here: ${ids}`,
    noneCompacted: 'nothing has been compacted here yet',
    unknownBlock: (/** @type {string} */ got, /** @type {string} */ known) => `no block summary of this session covers block ${got}; ${known}.`,
    blocksHere: (/** @type {string} */ ids) => `summarized blocks: ${ids}`,
    noneSummarized: 'no block has been summarized yet',
  },
}

const ZH = {
  description:
    '读回被折叠、区块总结或压缩从你的上下文中移除的工作的原始行：工具输出、调用参数、你自己写的文字、用户消息。给出 `query`（子串；智能大小写）或 `/regex/flags` 得到匹配的行及其 seq 和工具；不给则得到被折叠消息的索引。`fold` 按检查点编号（或 "latest"）选定一个折叠，`block` 按区块 id 选定一个区块总结，`compaction` 按编号（或 "latest"）选定一次压缩；都不给则搜索全部被折叠的内容。`around` 增加上下文行。只读本会话。',
  params: {
    fold: '要读取其折叠的检查点编号，或 "latest"。省略则搜索每个被折叠的区域。',
    block: '要读取其总结的区块 id（区块模式）。',
    compaction: '压缩编号（压缩检查点的最后一行会写明）或 "latest"。',
    query: '子串（不含大写字母时不区分大小写）或 /regex/flags（标志 i）。省略则返回索引。',
    around: (/** @type {number} */ max) => `每个匹配行前后的上下文行数，0 到 ${max}（默认 0）。`,
  },
  region: {
    fold: (/** @type {number} */ id) => `折叠 ${id}`,
    block: (/** @type {string} */ ids) => `区块 ${ids || '（无 id）'}`,
    compaction: (/** @type {string} */ id) => `压缩 ${id}`,
  },
  label: {
    text: '助手文本',
    reasoning: '助手推理',
    call: (/** @type {string} */ tool) => `${tool} 调用`,
    result: (/** @type {string} */ tool, /** @type {boolean} */ error) => `${tool} 结果${error ? '（错误）' : ''}`,
    user: '用户消息',
    other: (/** @type {string} */ who) => `${who} 消息`,
  },
  heading: (/** @type {string} */ name, /** @type {number} */ n, /** @type {string} */ span, /** @type {number} */ chars) => `${name}：${n} 条被折叠的消息${span}，共 ${chars} 个字符`,
  span: (/** @type {number} */ a, /** @type {number} */ b) => `，seq ${a}..${b}`,
  indexLine: (/** @type {string} */ label, /** @type {number} */ lines, /** @type {number} */ chars, /** @type {string} */ first) => `${label}（${lines} 行，${chars} 个字符）：${first}`,
  indexMore: (/** @type {number} */ n, /** @type {number} */ max) => `… 还有 ${n} 条被折叠的消息未列出（回答上限 ${max} 个字符）：选定一个折叠或区块，或用 query 搜索。`,
  indexEnd: '用 query（子串或 /regex/）搜索它们，得到其原始行。',
  regions: (/** @type {number} */ n) => `${n} 个被折叠的区域`,
  found: (/** @type {number} */ n, /** @type {string} */ where, /** @type {string} */ query) => `${where}中有 ${n} 行匹配 ${query}${n ? '：' : '。'}`,
  searchMore: (/** @type {number} */ n, /** @type {number} */ max) => `… 还有 ${n} 个匹配行未显示（回答上限 ${max} 个字符）：缩小查询范围，或选定一个折叠或区块。`,
  errors: {
    notObject: '参数必须是一个对象 {fold?, block?, compaction?, query?, around?}。',
    unknownArgs: (/** @type {number} */ _n, /** @type {string} */ list) => `未知参数 ${list}；可用的参数是 fold、block、compaction、query、around。`,
    fold: (/** @type {string} */ got) => `fold 必须是标记编号（正整数）或 "latest"，收到的是 ${got}。`,
    block: (/** @type {string} */ got) => `block 必须是非空的区块 id，收到的是 ${got}。`,
    blockLength: (/** @type {string} */ got, /** @type {number} */ n, /** @type {number} */ max) => `block ${got} 长 ${n} 个字符；区块 id 最多 ${max} 个字符。`,
    compaction: (/** @type {string} */ got) => `compaction 必须是压缩编号或 "latest"，收到的是 ${got}。`,
    several: 'fold、block 和 compaction 只能给一个。',
    query: (/** @type {string} */ got) => `query 必须是非空字符串（子串或 /regex/），收到的是 ${got}。`,
    around: (/** @type {number} */ max, /** @type {string} */ got) => `around 必须是 0 到 ${max} 的整数，收到的是 ${got}。`,
    badQuery: (/** @type {string} */ detail) => `查询无法使用（\`${detail.replace(/`/g, "'")}\`）；改写后再调用。`,
    nothing: '此会话还没有任何内容被折叠，所以没有什么可读回；所有内容都还在你的上下文中。',
    onlyBlocks: (/** @type {string} */ ids, /** @type {string} */ tool) => `此会话还没有折叠过检查点（只有区块总结：${ids}）；用 {"block": id} 调用 ${tool}。`,
    foreign: (/** @type {number} */ id, /** @type {string} */ tool, /** @type {string} */ here) => `检查点标记 ${id} 属于另一个会话；${tool} 只读取本会话的折叠（${here}）。`,
    foldsHere: (/** @type {string} */ ids) => `本会话的折叠：${ids}`,
    noneFolded: '本会话还没有折叠',
    notFolded: (/** @type {number} */ id, /** @type {string} */ rewind) => `本会话的检查点标记 ${id} 还没有折叠（先调用 ${rewind}）`,
    noFold: (/** @type {number} */ id) => `本会话没有检查点标记 ${id} 的折叠`,
    unknownFold: (/** @type {string} */ why, /** @type {string} */ here) => `${why}；${here}。`,
    noFoldHere: '本会话还没有折叠过检查点',
    unknownCompaction: (/** @type {string} */ got, /** @type {string} */ known) => `此会话没有压缩 ${got}；${known}。`,
    compactionsHere: (/** @type {string} */ ids) => `本会话的压缩：${ids}`,
    noneCompacted: '本会话还没有任何内容被压缩',
    unknownBlock: (/** @type {string} */ got, /** @type {string} */ known) => `本会话没有覆盖区块 ${got} 的区块总结；${known}。`,
    blocksHere: (/** @type {string} */ ids) => `已总结的区块：${ids}`,
    noneSummarized: '还没有区块被总结',
  },
}

/** Both languages' words. */
export const WORDS = { en: EN, zh: ZH }

/** @param {'en' | 'zh' | undefined} language */
export const wordsOf = (language) => (language === 'zh' ? ZH : EN)
