// UI strings of the memory browser, English and Chinese. The page follows the browser's language
// (navigator.languages) and can be switched; every visible string comes from here.
export const STRINGS = {
  en: {
    title: 'stablemem — memory browser',
    brand: 'Memory browser',
    tabSearch: 'Search', tabBrowse: 'Browse', tabFacts: 'Facts', tabScenes: 'Scenes', tabHealth: 'Health',
    language: '中文',
    readOnly: 'Read-only: nothing can be changed from this page.',
    searchPlaceholder: 'Ask what the agent remembers…',
    searchButton: 'Search',
    scopeAll: 'Every scope', scopeLabel: 'Scope',
    modelView: 'As the model sees it',
    modelViewHint: 'The message the agent would get appended to this question, byte for byte.',
    nothingInjected: 'Nothing would be injected for this message.',
    abstained: 'Recall abstains: the store has no record of {missing}.',
    nearHint: 'One typo away, the store holds: {near}.',
    noHits: 'No notes match.',
    hitsOf: '{n} ranked notes; {m} would be injected (top {k}, the best five notes’ relevances summed ≥ {min}).',
    score: 'score', relevance: 'relevance', exact: 'exact', injected: 'injected', notInjected: 'not injected',
    why: 'why', scene: 'scene', source: 'source', layer: 'layer', created: 'created', updated: 'updated',
    accessed: 'accessed', times: '{n} times', lastAccess: 'last', never: 'never', type: 'type', scopes: 'scopes',
    filterScene: 'Scene', filterSource: 'Source', filterLayer: 'Layer', filterState: 'State', filterSince: 'From', filterUntil: 'Before',
    any: 'any', stable: 'stable', cold: 'cold', stateAll: 'all', stateCurrent: 'current', stateSuperseded: 'superseded',
    notesCount: '{n} notes', notesCountCapped: 'more than {n} notes',
    loadMore: 'Load more', forgetSelected: 'Forget selected ({n})', selectNote: 'select',
    back: '← Back', noteTitle: 'Note', superseded: 'superseded', current: 'current',
    supersededBy: 'Replaced by', replaces: 'Replaces', history: 'Supersede chain', edges: 'Edges', provenance: 'Provenance',
    noProvenance: 'Saved as a note (not captured from a conversation).',
    capturedFrom: 'session {session} · event {seq} · {role} · {time}',
    factsFrom: 'Facts distilled from it', nearDuplicates: 'Near-duplicates', markDuplicate: 'Mark as duplicate of this',
    markedDuplicate: 'Marked as a duplicate.',
    edit: 'Edit', save: 'Save as a new note', cancel: 'Cancel', editHint: 'Saved as a new note that supersedes this one; the old text stays in the history.',
    forget: 'Forget', forgetConfirmTitle: 'Forget for good?',
    forgetConfirm: 'This deletes {n} note(s) and their index entries, vectors and edges. No bytes of them stay in the store file.',
    forgetDo: 'Forget', forgotten: 'Forgotten: {n} note(s).',
    none: 'none', missingNote: '(forgotten or missing)',
    factsTitle: 'Facts (L3)', factsEmpty: 'No facts distilled yet: cooling turns idle captured turns into facts (stablemem cool).',
    derivedFrom: 'from',
    scenesEmpty: 'This store has no scenes.',
    scenesHint: 'A scene forms the second time the agent talks in the same situation (channel, group or partner, topic), or is declared in the config or by a note saved with a scene.',
    healthTitle: 'Health', blocks: 'Notes', edgesCount: 'Edges', fileSize: 'File size', schema: 'Schema version', lastWrite: 'Last write',
    layers: 'By layer', byScope: 'By scope', captured: 'captured at compaction', undistilled: 'waiting for another try',
    perDay: 'Notes written per day', lastCooling: 'Last cooling',
    countersHint: 'Recall, injection and abstention counters and degraded reasons (embedder, team layer) are kept in memory by the running dsh process; ask it with ctx.stablemem.stats(). This page shows what the store file holds.',
    error: 'Error: {e}',
    loading: 'Loading…',
  },
  zh: {
    title: 'stablemem — 记忆浏览器',
    brand: '记忆浏览器',
    tabSearch: '搜索', tabBrowse: '浏览', tabFacts: '事实', tabScenes: '场景', tabHealth: '状态',
    language: 'English',
    readOnly: '只读：此页面不能修改任何内容。',
    searchPlaceholder: '问问智能体记得什么…',
    searchButton: '搜索',
    scopeAll: '全部范围', scopeLabel: '范围',
    modelView: '模型看到的内容',
    modelViewHint: '智能体在这条消息后会收到的注入消息，逐字节一致。',
    nothingInjected: '这条消息不会注入任何内容。',
    abstained: '召回弃权：存储中没有 {missing} 的记录。',
    nearHint: '差一个字符的相近记录：{near}。',
    noHits: '没有匹配的笔记。',
    hitsOf: '排序 {n} 条笔记；其中 {m} 条会被注入（前 {k} 条，最相关五条的相关度之和 ≥ {min}）。',
    score: '分数', relevance: '相关度', exact: '精确', injected: '会注入', notInjected: '不注入',
    why: '原因', scene: '场景', source: '来源', layer: '层', created: '创建', updated: '更新',
    accessed: '访问', times: '{n} 次', lastAccess: '最近', never: '从未', type: '类型', scopes: '范围',
    filterScene: '场景', filterSource: '来源', filterLayer: '层', filterState: '状态', filterSince: '起始', filterUntil: '截止',
    any: '全部', stable: '稳定', cold: '冷', stateAll: '全部', stateCurrent: '当前', stateSuperseded: '已取代',
    notesCount: '{n} 条笔记', notesCountCapped: '超过 {n} 条笔记',
    loadMore: '加载更多', forgetSelected: '遗忘所选（{n}）', selectNote: '选择',
    back: '← 返回', noteTitle: '笔记', superseded: '已取代', current: '当前',
    supersededBy: '被取代为', replaces: '取代了', history: '取代链', edges: '关系', provenance: '出处',
    noProvenance: '作为笔记保存（不是从对话中捕获的）。',
    capturedFrom: '会话 {session} · 事件 {seq} · {role} · {time}',
    factsFrom: '从中提炼的事实', nearDuplicates: '近似重复', markDuplicate: '标记为此条的重复',
    markedDuplicate: '已标记为重复。',
    edit: '编辑', save: '另存为新笔记', cancel: '取消', editHint: '保存为取代此条的新笔记；旧文本保留在历史中。',
    forget: '遗忘', forgetConfirmTitle: '永久遗忘？',
    forgetConfirm: '这将删除 {n} 条笔记及其索引、向量和关系，存储文件中不留任何字节。',
    forgetDo: '遗忘', forgotten: '已遗忘 {n} 条笔记。',
    none: '无', missingNote: '（已遗忘或不存在）',
    factsTitle: '事实（L3）', factsEmpty: '还没有提炼出事实：冷却会把闲置的捕获轮次提炼为事实（stablemem cool）。',
    derivedFrom: '来自',
    scenesEmpty: '此存储没有场景。',
    scenesHint: '智能体第二次在同一情境（渠道、群或对象、话题）中对话时会形成场景；也可以在配置中声明，或在保存笔记时指定场景。',
    healthTitle: '状态', blocks: '笔记', edgesCount: '关系', fileSize: '文件大小', schema: '架构版本', lastWrite: '最近写入',
    layers: '按层', byScope: '按范围', captured: '压缩时捕获', undistilled: '等待重试',
    perDay: '每天写入的笔记', lastCooling: '最近冷却',
    countersHint: '召回、注入和弃权计数以及降级原因（嵌入模型、团队层）由运行中的 dsh 进程保存在内存中，可用 ctx.stablemem.stats() 查询；此页面显示存储文件中的内容。',
    error: '错误：{e}',
    loading: '加载中…',
  },
}

/** The language to start in: a saved choice, else the browser's first Chinese or English preference. */
export function startLanguage(saved, languages) {
  if (saved === 'en' || saved === 'zh') return saved
  for (const lang of languages) {
    if (/^zh\b/i.test(lang)) return 'zh'
    if (/^en\b/i.test(lang)) return 'en'
  }
  return 'en'
}

/** A string with `{name}` placeholders filled in. */
export function format(template, values = {}) {
  return template.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ''))
}
