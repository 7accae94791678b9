// The memory browser's page. No framework: a small element helper that only ever sets text
// (textContent, attributes), never HTML, so a stored note can never become markup or script.
// Routes live in the location hash (#search, #browse, #note/<id>, #facts, #scenes, #health);
// the per-run token stays in the query string and goes with every request.

const token = new URLSearchParams(location.search).get('t') ?? ''
const { STRINGS, startLanguage, format } = await import(`./i18n.js?t=${encodeURIComponent(token)}`)

let lang = startLanguage(localStorage.getItem('stablemem.lang'), navigator.languages ?? [navigator.language])
let session = { csrf: '', readOnly: true }
const selected = new Set()

/** The string `key` in the current language, with placeholders filled. */
function t(key, values) {
  return format(STRINGS[lang][key] ?? STRINGS.en[key] ?? key, values)
}

/** Builds an element: attributes (event handlers for `on…`), then children (strings become text nodes). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value)
    else if (name === 'class') el.className = value
    else if (value === true) el.setAttribute(name, '')
    else el.setAttribute(name, String(value))
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    el.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child)
  }
  return el
}

/** Display lines (already escaped by the server) as a block of text lines. */
function lines(list, cls = 'text') {
  return h('div', { class: cls }, list.map((line) => h('div', { class: 'line' }, line === '' ? '\u00a0' : line)))
}

async function api(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ''))
  const res = await fetch(`${path}?${query}`, { headers: { 'x-stablemem-token': token } })
  const body = await res.json()
  if (!res.ok) throw new Error(body.error ?? res.statusText)
  return body
}

async function change(path, body) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'x-stablemem-token': token, 'x-stablemem-csrf': session.csrf, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const answer = await res.json()
  if (!res.ok) throw new Error(answer.error ?? res.statusText)
  return answer
}

function when(ms) {
  if (ms === null || ms === undefined) return t('never')
  const d = new Date(ms)
  const two = (n) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++ }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`
}

function noteLink(id) {
  return h('a', { href: `#note/${encodeURIComponent(id)}`, class: 'id' }, id)
}

function errorBox(error) {
  return h('p', { class: 'error', role: 'alert' }, t('error', { e: error instanceof Error ? error.message : String(error) }))
}

/** Asks in the page's own dialog; resolves true when confirmed. */
function confirmDialog(title, text, ok) {
  const dialog = document.getElementById('confirm')
  document.getElementById('confirm-title').textContent = title
  document.getElementById('confirm-text').textContent = text
  const okButton = document.getElementById('confirm-ok')
  const cancel = document.getElementById('confirm-cancel')
  okButton.textContent = ok
  cancel.textContent = t('cancel')
  return new Promise((resolve) => {
    const done = (answer) => {
      okButton.onclick = null
      cancel.onclick = null
      dialog.close()
      resolve(answer)
    }
    okButton.onclick = () => done(true)
    cancel.onclick = () => done(false)
    dialog.showModal()
  })
}

// ---- views ----

const TABS = [['search', 'tabSearch'], ['browse', 'tabBrowse'], ['facts', 'tabFacts'], ['scenes', 'tabScenes'], ['health', 'tabHealth']]

function chrome(active) {
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en'
  document.title = t('title')
  document.getElementById('brand').textContent = t('brand')
  const tabs = document.getElementById('tabs')
  tabs.replaceChildren(...TABS.map(([route, key]) => h('a', { href: `#${route}`, class: route === active ? 'tab active' : 'tab', 'data-tab': route }, t(key))))
  const button = document.getElementById('lang')
  button.textContent = t('language')
  button.onclick = () => {
    lang = lang === 'zh' ? 'en' : 'zh'
    localStorage.setItem('stablemem.lang', lang)
    route()
  }
  const banner = document.getElementById('banner')
  banner.hidden = !session.readOnly
  banner.textContent = session.readOnly ? t('readOnly') : ''
}

async function scopeSelect(value, onchange) {
  const { scopes } = await api('/api/filters')
  return h('label', { class: 'field' }, t('scopeLabel'),
    h('select', { id: 'scope', onchange },
      h('option', { value: 'all', selected: value === 'all' || !value }, t('scopeAll')),
      scopes.map((s) => h('option', { value: s.scope, selected: value === s.scope }, `${s.scope} (${s.notes})`))))
}

async function searchView(params) {
  const q = params.get('q') ?? ''
  const scope = params.get('scope') ?? 'all'
  const showModel = params.get('model') === '1'
  const input = h('input', { id: 'q', type: 'search', value: q, placeholder: t('searchPlaceholder'), autocomplete: 'off' })
  const go = (extra = {}) => {
    const next = new URLSearchParams({ q: input.value, scope: document.getElementById('scope')?.value ?? scope, model: showModel ? '1' : '0', ...extra })
    location.hash = `search?${next}`
  }
  const form = h('form', { class: 'search', onsubmit: (e) => { e.preventDefault(); go() } },
    input, h('button', { type: 'submit', id: 'search-go' }, t('searchButton')))
  const toggle = h('label', { class: 'toggle' },
    h('input', { type: 'checkbox', id: 'model-toggle', checked: showModel, onchange: (e) => go({ model: e.target.checked ? '1' : '0' }) }),
    t('modelView'))
  const out = h('section', { id: 'results' })
  const view = [h('div', { class: 'row wrap' }, form, await scopeSelect(scope, () => go()), toggle), out]
  if (q.trim() === '') return view
  try {
    const result = await api('/api/search', { q, scope })
    const injectedCount = result.hits.filter((x) => x.injected).length
    if (showModel) {
      out.append(h('div', { class: 'model' },
        h('h3', {}, t('modelView')), h('p', { class: 'hint' }, t('modelViewHint')),
        result.message === '' ? h('p', { class: 'empty', id: 'model-empty' }, t('nothingInjected')) : h('pre', { id: 'model-message' }, result.message)))
    }
    if (result.abstained) {
      out.append(h('p', { class: 'notice', id: 'abstained' }, t('abstained', { missing: result.abstained.missing.join(', ') })))
      if (result.abstained.near.length > 0) out.append(h('p', { class: 'hint' }, t('nearHint', { near: result.abstained.near.join(', ') })))
    }
    if (result.hits.length === 0) {
      if (!result.abstained) out.append(h('p', { class: 'empty' }, t('noHits')))
      return view
    }
    out.append(h('p', { class: 'hint', id: 'hits-summary' }, t('hitsOf', { n: result.hits.length, m: injectedCount, k: result.gate.topK, min: result.gate.minRelevance })))
    out.append(h('ol', { class: 'hits' }, result.hits.map((hit) => h('li', { class: hit.injected ? 'hit card in' : 'hit card', 'data-id': hit.id },
      h('div', { class: 'meta' },
        noteLink(hit.id),
        h('span', { class: 'badge' }, `${t('score')} ${hit.score.toFixed(3)}`),
        h('span', { class: 'badge' }, `${t('relevance')} ${hit.relevance.toFixed(2)}`),
        hit.exact ? h('span', { class: 'badge exact' }, t('exact')) : null,
        h('span', { class: hit.injected ? 'badge in' : 'badge out' }, hit.injected ? t('injected') : t('notInjected')),
        hit.scene ? h('span', { class: 'badge' }, `${t('scene')}: ${hit.scene}`) : null,
        h('span', { class: 'badge' }, `${t('layer')}: ${t(hit.layer)}`)),
      lines(hit.lines),
      h('p', { class: 'why' }, `${t('why')}: ${hit.why}`)))))
  } catch (error) {
    out.append(errorBox(error))
  }
  return view
}

function filterSelect(id, label, options, value) {
  return h('label', { class: 'field' }, label,
    h('select', { id, 'data-filter': id },
      options.map(([v, text]) => h('option', { value: v, selected: v === value }, text))))
}

async function browseView(params) {
  const filters = await api('/api/filters')
  const current = Object.fromEntries(['scene', 'source', 'layer', 'state', 'since', 'until', 'scope'].map((k) => [k, params.get(k) ?? '']))
  const apply = () => {
    const next = new URLSearchParams()
    for (const el of document.querySelectorAll('[data-filter]')) if (el.value !== '') next.set(el.dataset.filter, el.value)
    location.hash = `browse?${next}`
  }
  const bar = h('form', { class: 'filters', onchange: apply, onsubmit: (e) => { e.preventDefault(); apply() } },
    filterSelect('scene', t('filterScene'), [['', t('any')], ...filters.scenes.map((s) => [s.value, `${s.value} (${s.notes})`])], current.scene),
    filterSelect('source', t('filterSource'), [['', t('any')], ...filters.sources.map((s) => [s.value, `${s.value} (${s.notes})`])], current.source),
    filterSelect('layer', t('filterLayer'), [['', t('any')], ['stable', t('stable')], ['cold', t('cold')]], current.layer),
    filterSelect('state', t('filterState'), [['', t('stateAll')], ['current', t('stateCurrent')], ['superseded', t('stateSuperseded')]], current.state),
    filterSelect('scope', t('scopeLabel'), [['', t('scopeAll')], ...filters.scopes.map((s) => [s.scope, `${s.scope} (${s.notes})`])], current.scope),
    h('label', { class: 'field' }, t('filterSince'), h('input', { type: 'date', 'data-filter': 'since', value: current.since })),
    h('label', { class: 'field' }, t('filterUntil'), h('input', { type: 'date', 'data-filter': 'until', value: current.until })))
  selected.clear()
  const count = h('span', { class: 'hint', id: 'notes-count' })
  const forgetButton = h('button', { type: 'button', id: 'forget-selected', class: 'danger', disabled: true, hidden: session.readOnly }, t('forgetSelected', { n: 0 }))
  const list = h('ul', { class: 'notes', id: 'notes' })
  const more = h('button', { type: 'button', id: 'more', hidden: true }, t('loadMore'))
  const status = h('div', { id: 'browse-status' })
  const refreshSelection = () => {
    forgetButton.disabled = selected.size === 0
    forgetButton.textContent = t('forgetSelected', { n: selected.size })
  }
  forgetButton.onclick = async () => {
    const ids = [...selected]
    if (!(await confirmDialog(t('forgetConfirmTitle'), t('forgetConfirm', { n: ids.length }), t('forgetDo')))) return
    try {
      const result = await change('/api/forget', { ids })
      selected.clear()
      await load(undefined, true)
      status.replaceChildren(h('p', { class: 'notice', id: 'forget-done' }, t('forgotten', { n: result.deleted.length })))
    } catch (error) {
      status.replaceChildren(errorBox(error))
    }
  }
  const query = () => {
    const out = {}
    for (const [k, v] of Object.entries(current)) if (v !== '') out[k] = k === 'since' || k === 'until' ? String(Date.parse(v)) : v
    return out
  }
  async function load(before, reset = false) {
    const page = await api('/api/notes', { ...query(), before })
    if (reset) list.replaceChildren()
    count.textContent = page.capped ? t('notesCountCapped', { n: page.total }) : t('notesCount', { n: page.total })
    for (const note of page.notes) {
      const box = h('input', { type: 'checkbox', class: 'pick', 'aria-label': t('selectNote'), hidden: session.readOnly,
        onchange: (e) => { if (e.target.checked) selected.add(note.id); else selected.delete(note.id); refreshSelection() } })
      list.append(h('li', { class: 'card note-row', 'data-id': note.id },
        h('div', { class: 'meta' }, box, noteLink(note.id),
          h('span', { class: 'badge' }, when(note.createdAt)),
          note.source ? h('span', { class: 'badge' }, `${t('source')}: ${note.source}`) : null,
          note.scene ? h('span', { class: 'badge' }, `${t('scene')}: ${note.scene}`) : null,
          h('span', { class: 'badge' }, t(note.layer)),
          note.supersededBy ? h('span', { class: 'badge out' }, t('superseded')) : null),
        lines(note.lines.slice(0, 4))))
    }
    more.hidden = page.next === undefined
    more.onclick = () => load(page.next)
    refreshSelection()
  }
  try {
    await load(undefined, true)
  } catch (error) {
    status.append(errorBox(error))
  }
  return [bar, h('div', { class: 'row between' }, count, forgetButton), status, list, more]
}

function section(title, ...body) {
  return h('section', { class: 'card part' }, h('h3', {}, title), ...body)
}

function briefList(items, empty = t('none')) {
  if (items.length === 0) return h('p', { class: 'empty' }, empty)
  return h('ul', { class: 'brief' }, items.map((item) => h('li', {}, noteLink(item.id),
    item.missing ? h('span', { class: 'hint' }, ` ${t('missingNote')}`) : lines(item.lines))))
}

async function noteView(id) {
  let data
  try {
    data = await api('/api/note', { id })
  } catch (error) {
    return [h('a', { href: '#browse', class: 'back' }, t('back')), errorBox(error)]
  }
  const { note } = data
  const status = h('div', { id: 'note-status' })
  const body = h('div', { id: 'note-body' }, lines(note.lines, 'text big'))
  const actions = h('div', { class: 'row', hidden: session.readOnly })
  const editButton = h('button', { type: 'button', id: 'edit' }, t('edit'))
  const forgetButton = h('button', { type: 'button', id: 'forget', class: 'danger' }, t('forget'))
  editButton.onclick = () => {
    const area = h('textarea', { id: 'edit-text', rows: 6 })
    area.value = note.text
    const save = h('button', { type: 'button', id: 'edit-save' }, t('save'))
    const cancel = h('button', { type: 'button' }, t('cancel'))
    body.replaceChildren(area, h('p', { class: 'hint' }, t('editHint')), h('div', { class: 'row' }, save, cancel))
    cancel.onclick = () => route()
    save.onclick = async () => {
      try {
        const result = await change('/api/edit', { id: note.id, text: area.value })
        location.hash = `note/${encodeURIComponent(result.id)}`
      } catch (error) {
        status.replaceChildren(errorBox(error))
      }
    }
  }
  forgetButton.onclick = async () => {
    if (!(await confirmDialog(t('forgetConfirmTitle'), t('forgetConfirm', { n: 1 }), t('forgetDo')))) return
    try {
      const result = await change('/api/forget', { ids: [note.id] })
      status.replaceChildren(h('p', { class: 'notice', id: 'forget-done' }, t('forgotten', { n: result.deleted.length })))
      body.replaceChildren()
      actions.hidden = true
    } catch (error) {
      status.replaceChildren(errorBox(error))
    }
  }
  if (note.supersededBy === null) actions.append(editButton)
  actions.append(forgetButton)
  const dupButton = (other) => h('button', { type: 'button', class: 'small', 'data-dup': other.id, hidden: session.readOnly, onclick: async () => {
    try {
      await change('/api/duplicate', { id: other.id, of: note.id })
      status.replaceChildren(h('p', { class: 'notice' }, t('markedDuplicate')))
    } catch (error) {
      status.replaceChildren(errorBox(error))
    }
  } }, t('markDuplicate'))
  return [
    h('a', { href: '#browse', class: 'back' }, t('back')),
    h('h2', {}, `${t('noteTitle')} `, h('span', { class: 'id', id: 'note-id' }, note.id),
      h('span', { class: note.supersededBy ? 'badge out' : 'badge in' }, note.supersededBy ? t('superseded') : t('current'))),
    status, body, actions,
    h('dl', { class: 'facts-table' },
      h('dt', {}, t('source')), h('dd', {}, note.source || t('none')),
      h('dt', {}, t('scene')), h('dd', {}, note.scene || t('none')),
      h('dt', {}, t('type')), h('dd', {}, note.semanticType || t('none')),
      h('dt', {}, t('layer')), h('dd', {}, t(note.layer)),
      h('dt', {}, t('scopes')), h('dd', {}, data.scopes.join(', ') || t('none')),
      h('dt', {}, t('created')), h('dd', {}, when(note.createdAt)),
      h('dt', {}, t('updated')), h('dd', {}, when(note.updatedAt)),
      h('dt', {}, t('accessed')), h('dd', {}, `${t('times', { n: note.accessCount })} · ${t('lastAccess')} ${when(note.lastAccessAt)}`)),
    section(t('history'),
      h('h4', {}, t('replaces')), briefList(data.older),
      h('h4', {}, t('supersededBy')), briefList(data.newer)),
    section(t('provenance'), data.origins.length === 0 ? h('p', { class: 'empty' }, t('noProvenance'))
      : h('ul', {}, data.origins.map((o) => h('li', {}, t('capturedFrom', { session: o.sessionId, seq: o.seq, role: o.role, time: when(o.eventTime) }))))),
    section(t('factsFrom'), briefList(data.facts)),
    section(t('nearDuplicates'), data.duplicates.length === 0 ? h('p', { class: 'empty' }, t('none'))
      : h('ul', { class: 'brief' }, data.duplicates.map((d) => h('li', {}, noteLink(d.id), d.missing ? null : lines(d.lines), dupButton(d))))),
    section(t('edges'), data.edges.length === 0 ? h('p', { class: 'empty' }, t('none'))
      : h('ul', {}, data.edges.map((e) => h('li', {}, `${e.sourceId} —${e.type}→ ${e.targetId}`)))),
  ]
}

async function factsView() {
  const { facts } = await api('/api/facts')
  if (facts.length === 0) return [h('h2', {}, t('factsTitle')), h('p', { class: 'empty', id: 'facts-empty' }, t('factsEmpty'))]
  // A small graph as a list: each subject, its dimension = value edges, and where each came from.
  const bySubject = new Map()
  for (const fact of facts) {
    const [subject, rest = ''] = fact.text.split('|', 2)
    if (!bySubject.has(subject)) bySubject.set(subject, [])
    bySubject.get(subject).push({ ...fact, rest })
  }
  return [h('h2', {}, t('factsTitle')), h('div', { class: 'graph' }, [...bySubject].map(([subject, list]) => h('div', { class: 'card subject' },
    h('div', { class: 'node' }, subject),
    h('ul', {}, list.map((f) => h('li', { class: f.supersededBy ? 'superseded' : '' },
      h('span', { class: 'edge' }, f.rest), ' ', noteLink(f.id), ` ${t('derivedFrom')} `, f.from.map((id) => noteLink(id))))))))]
}

async function scenesView() {
  const scenes = await api('/api/scenes')
  if (!scenes.available) return [h('h2', {}, t('tabScenes')), h('p', { class: 'empty', id: 'scenes-empty' }, t('scenesEmpty')), h('p', { class: 'hint' }, t('scenesHint'))]
  return [h('h2', {}, t('tabScenes')), h('ul', { class: 'notes' }, scenes.scenes.map((s) => h('li', { class: 'card' },
    h('div', { class: 'meta' }, h('strong', {}, s.key), h('span', { class: 'badge' }, `${s.notes}`), h('span', { class: 'badge' }, s.origin), h('span', { class: 'badge' }, String(s.strength))),
    h('p', { class: 'hint' }, s.features.join(', ')))))]
}

/** Bar chart of notes per day, as SVG (attributes only: no inline style). */
function chart(days) {
  const ns = 'http://www.w3.org/2000/svg'
  const width = 600
  const height = 140
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', `0 0 ${width} ${height + 20}`)
  svg.setAttribute('class', 'chart')
  svg.setAttribute('role', 'img')
  const max = Math.max(1, ...days.map((d) => d.notes))
  // At least 30 slots, newest day at the right edge, so a young store does not get one wall-wide bar.
  const slots = Math.max(30, days.length)
  const step = width / slots
  const offset = slots - days.length
  days.forEach((d, i) => {
    const bar = document.createElementNS(ns, 'rect')
    const barHeight = Math.max(1, (d.notes / max) * height)
    bar.setAttribute('x', String((offset + i) * step + step * 0.1))
    bar.setAttribute('y', String(height - barHeight))
    bar.setAttribute('width', String(step * 0.8))
    bar.setAttribute('height', String(barHeight))
    const title = document.createElementNS(ns, 'title')
    title.textContent = `${d.day}: ${d.notes}`
    bar.append(title)
    svg.append(bar)
  })
  const label = (x, y, anchor, text) => {
    const el = document.createElementNS(ns, 'text')
    el.setAttribute('x', String(x))
    el.setAttribute('y', String(y))
    el.setAttribute('text-anchor', anchor)
    el.textContent = text
    svg.append(el)
  }
  if (days.length > 0) {
    if (days.length > 1) label(offset * step, height + 16, 'start', days[0].day)
    label(width, height + 16, 'end', days[days.length - 1].day)
    label(0, 12, 'start', `max ${max}`)
  }
  return svg
}

async function healthView() {
  const s = await api('/api/health')
  const tile = (label, value) => h('div', { class: 'card tile' }, h('div', { class: 'hint' }, label), h('div', { class: 'big' }, String(value)))
  return [
    h('h2', {}, t('healthTitle')),
    h('div', { class: 'tiles' },
      tile(t('blocks'), s.blocks), tile(t('edgesCount'), s.edges), tile(t('fileSize'), bytes(s.fileBytes)),
      tile(t('schema'), s.schemaVersion), tile(t('lastWrite'), when(s.lastWriteAt))),
    section(t('layers'), h('p', {}, `${t('stable')} ${s.layers.stable} · ${t('cold')} ${s.layers.cold} · ${t('captured')} ${s.layers.captured} · ${t('undistilled')} ${s.layers.undistilled}`),
      s.lastCooling ? h('p', { class: 'hint' }, `${t('lastCooling')}: ${when(s.lastCooling.lastRunAt)} ${s.lastCooling.result}`) : null),
    section(t('byScope'), h('ul', {}, s.byScope.map((x) => h('li', {}, `${x.scope}: ${x.notes}`)))),
    section(t('perDay'), s.perDay.length === 0 ? h('p', { class: 'empty' }, t('none')) : chart(s.perDay)),
    h('p', { class: 'hint' }, t('countersHint')),
  ]
}

// ---- routing ----

let generation = 0
async function route() {
  const mine = ++generation
  const raw = location.hash.slice(1)
  const cut = raw.indexOf('?')
  const path = decodeURIComponent(cut < 0 ? raw : raw.slice(0, cut))
  const params = new URLSearchParams(cut < 0 ? '' : raw.slice(cut + 1))
  const view = document.getElementById('view')
  const name = path.startsWith('note/') ? 'browse' : (path || 'search')
  chrome(name)
  let content
  try {
    if (path.startsWith('note/')) content = await noteView(path.slice(5))
    else if (name === 'browse') content = await browseView(params)
    else if (name === 'facts') content = await factsView()
    else if (name === 'scenes') content = await scenesView()
    else if (name === 'health') content = await healthView()
    else content = await searchView(params)
  } catch (error) {
    content = [errorBox(error)]
  }
  if (mine !== generation) return // a newer navigation replaced this one
  view.replaceChildren(...[content].flat())
  view.dataset.ready = name
  // Which location this content belongs to (tests wait on it; a hash change alone re-renders).
  document.body.dataset.rendered = location.hash
}

try {
  session = await api('/api/session')
} catch (error) {
  document.getElementById('view').replaceChildren(errorBox(error))
  throw error
}
window.addEventListener('hashchange', route)
await route()
