/**
 * What credentials look like: one entry per published format (the issuer's documented prefix,
 * alphabet and length), plus the labelled forms people write by hand (assignments, command-line
 * options, URL user info, prose in English and Chinese). `lib/secrets.ts` runs them; the table in
 * `docs/reliability.md` lists every class with a positive example, and `npm run bench:secrets`
 * measures what they cost and what they mask by mistake on real corpora.
 *
 * Every pattern must stay linear on hostile input: quantifiers are bounded, adjacent repeated
 * parts use disjoint character classes (or a required separator between them), and nothing is
 * nested without a bound. `test/reliability/secrets-shapes.test.ts` runs each on 1 MB of text
 * built to make it backtrack.
 */

/**
 * One credential shape. `group` is the capture group holding the secret part (0 = whole match).
 * `needs` finds a fragment that every match of `pattern` contains: the shape runs only on texts
 * where it is found, so a note that mentions a token runs the few shapes about tokens, not all.
 */
export interface SecretShape {
  kind: string
  pattern: RegExp
  group: number
  needs: RegExp
  /** A further test of the captured value; a match it rejects is not a credential. */
  accept?: (value: string, match: RegExpMatchArray) => boolean
}

/**
 * Left and right edges of a token: not inside a longer run of token characters. A terminal
 * colour code just before a token (`ESC[31m`, or `[31m` once the renderer has made ESC a space)
 * ends in a letter but is not part of it: coloured tool output pasted or captured at compaction
 * puts keys right behind one.
 */
const L = '(?<![A-Za-z0-9_-](?<!\\[[0-9;]{0,16}m))'
const R = '(?![A-Za-z0-9_-])'

/** A token with a fixed published prefix and body. */
function token(kind: string, needs: RegExp, body: string): SecretShape {
  return { kind, pattern: new RegExp(`${L}(?:${body})${R}`, 'g'), group: 0, needs }
}

/** The fragments the labelled shapes need (case-insensitive, like the labels). */
const NEEDS_PASSWORD = /passw|pwd|passphrase|passcode|secret|api[_-]?key|access[_-]?key|token|密码|口令|密钥|秘钥|令牌|暗码/i
const NEEDS_KEY_WORD = /pass|pwd|token|secret|key|credential|auth/i

/**
 * A value after a label: quoted (ASCII or CJK quotes, or a Markdown code span whose content
 * neither starts nor ends with a space, so the closing backtick of "`--password`, …" is not taken
 * for an opening one; the quotes are part of the secret so the placeholder replaces them too) or
 * one run of printable ASCII without quotes, backticks, brackets or separators. A placeholder already there (`[redacted password]`) is matched first and then
 * skipped, so masking twice changes nothing and never reaches past it to the next word. Non-ASCII is left out of the unquoted form so that Chinese prose after a label
 * ("密钥为加密算法的参数") is never taken for a password.
 */
const VALUE = '(\\[redacted [a-z-]{1,40}\\]|"[^"\\n]{1,512}"|\'[^\'\\n]{1,512}\'|`[^`\\s](?:[^`\\n]{0,510}[^`\\s])?`|“[^”\\n]{1,512}”|‘[^’\\n]{1,512}’|「[^」\\n]{1,512}」|『[^』\\n]{1,512}』|[\\x21\\x23-\\x26\\x2A\\x2B\\x2D-\\x3A\\x3C-\\x5A\\x5C\\x5E\\x5F\\x61-\\x7E]{1,512})'

/** Labels whose value is a password whatever it looks like. */
const PASSWORD_WORDS = 'password|passwd|pwd|passphrase|passcode'
/** Labels whose value is a credential when it looks random (see `looksRandom`). */
const KEY_WORDS = `${PASSWORD_WORDS}|pass|token|secret|key|apikey|credentials?|auth`
/** Chinese labels: 密码 password, 口令 password, 密钥/秘钥 secret key, 令牌 token, 暗码 passcode. */
const CJK_WORDS = '密码|口令|密钥|秘钥|令牌|暗码'
/** Chinese verbs between a label and its value: is, is (written), changed to, set to. */
const CJK_VERBS = '(?:是|为|為|改成了?|改为|设为|设置为)'
/** English verbs between a label and its value, longest first so "is now" is not read as "is" + "now". */
const EN_VERBS = 'is now|is set to|was changed to|changed to|set to|is|was|are|were'
/** What an English label names before its verb: "the password for the router was …" (at most 40 characters). */
const QUALIFIER = '(?:[ \\t]+(?:for|of|to|on|in)[ \\t]+[^\\n.,;:=]{1,40}?)?'
/** English words that name a key in prose; what stands before them ("aws", "the API", "secret access") does not matter. */
const PROSE_KEY_WORDS = '(?<![A-Za-z])(?:api|access|secret|private|auth)?(?:key|token|secret|credential)s?'
/** Chinese words that name a key but, unlike `CJK_WORDS`, also begin ordinary phrases: 私钥 private key, 凭证/凭据 credential. */
const CJK_KEY_WORDS = '私钥|凭证|凭据'
/** A label's connector in prose: an English verb (after an optional qualifier), a colon or equals sign, or a Chinese verb (and colon). */
const PROSE_CONNECTOR = `(?:${QUALIFIER}(?:[ \\t]+(?:${EN_VERBS})[ \\t]+|["']?[ \\t]*[:=：](?!//)[ \\t]*)|[ \\t]*${CJK_VERBS}(?:[ \\t]*[:：])?[ \\t]*)`

/** The last part of an identifier that names something about a secret, not the secret itself. */
const NOT_SECRET_SUFFIX = /^(?:file|path|dir|id|name|url|uri|host|port|user|username|type|len|length|size|ttl|expiry|expires|expiration|timeout|region|endpoint|header|field|prefix|alg|algorithm|version|count|enabled|mode|policy|format|env|hint|rotation|label)$/i

/**
 * Values that look like a random credential: at least 8 characters, no space, two of lower /
 * upper / digit, and not ordinary (see `looksOrdinary`).
 */
function looksRandom(value: string): boolean {
  const v = unquote(value)
  if (v.length < 8 || /\s/.test(v)) return false
  return [/[a-z]/, /[A-Z]/, /[0-9]/].filter((re) => re.test(v)).length >= 2 && !looksOrdinary(v)
}

/**
 * Values that read as something ordinary, not random: a URL, a path under a named folder, or
 * words and numbers joined by separators where no part changes between lower case, upper case
 * and digits more than twice (a version `node-v22.19.0-linux-x64`, a date `2024-06-01T10:30:00Z`,
 * an address, an id `user_12345678`, a file `server2024.key`). A random key's parts change
 * at almost every other character.
 */
function looksOrdinary(v: string): boolean {
  if (/:\/\/|^(?:~|\.{1,2})?\/[a-z][a-z0-9._-]*\//.test(v)) return true
  return v.split(/[^A-Za-z0-9]+/).every((part) => classChanges(part) <= 2)
}

/** How often `part` changes between lower case, upper case and digits. */
function classChanges(part: string): number {
  const kind = (c: string) => (c >= 'a' && c <= 'z' ? 0 : c >= 'A' && c <= 'Z' ? 1 : 2)
  let changes = 0
  for (let i = 1; i < part.length; i++) if (kind(part[i]!) !== kind(part[i - 1]!)) changes++
  return changes
}

/**
 * Values a prose label ("the key is …", "token 是 …") names as a key: random (`looksRandom`),
 * 16 characters or more, with letters and digits. Prose says less than `FOO_TOKEN=`, so it needs
 * more: no key format issued today is shorter, and a word or identifier has no digits.
 */
function looksKey(value: string): boolean {
  const v = unquote(value)
  return v.length >= 16 && /[0-9]/.test(v) && /[A-Za-z]/.test(v) && looksRandom(v)
}

/**
 * Values a person typed as a password in prose or on a command line: four characters or more
 * with a digit, a symbol or an upper-case letter after the first. Plain words ("required",
 * "incorrect") are the sentence going on, not a password; quoted values always count.
 */
function looksTyped(value: string): boolean {
  if (/^["'`“‘「『]/.test(value)) return unquote(value).trim().length > 0
  const v = value.replace(/[.,;:!?)\]]+$/, '')
  return v.length >= 4 && (/[0-9]/.test(v) || /[^A-Za-z0-9]/.test(v) || /^.+[A-Z]/.test(v))
}

function unquote(value: string): string {
  return /^["'`“‘「『]/.test(value) ? value.slice(1, -1) : value
}

/** The arguments before a command's password flag: at most 24, never past a shell separator (`;`, `|`, `&`). */
const ARGS = '(?:[ \\t]+[^\\s;|&]{1,256}){0,24}?[ \\t]+'

/**
 * Keys named by a prose label, in English or Chinese (issue 31): "aws 的 secret 是 …", "the key is
 * …", "the token: …", "api key = …", "私钥为：…", "password 是 …". The label is all that marks an
 * AWS secret access key, a hex key or any random string without a published prefix, so the
 * value after it is masked when it looks like a key (`looksKey`) or, after a password word, typed.
 */
const PROSE_LABELS: readonly SecretShape[] = [
  {
    kind: 'secret',
    pattern: new RegExp(`(?:${PROSE_KEY_WORDS}|${CJK_KEY_WORDS})${PROSE_CONNECTOR}${VALUE}`, 'gi'),
    group: 1, needs: /key|token|secret|credential|私钥|凭证|凭据/i,
    accept: (v) => looksKey(v),
  },
  {
    // password 是 …, pwd 为：… (the English verbs and the colon are the other password shapes')
    kind: 'password',
    pattern: new RegExp(`(?<![A-Za-z])(?:${PASSWORD_WORDS})[ \\t]*${CJK_VERBS}(?:[ \\t]*[:：])?[ \\t]*${VALUE}`, 'gi'),
    group: 1, needs: NEEDS_PASSWORD,
    accept: (v) => looksTyped(v),
  },
]

/** Every shape, run in this order; `findSecrets` merges overlapping matches into the earlier one. */
export const SHAPES: readonly SecretShape[] = [
  // PEM / OpenSSH / PGP private keys. A key without its END line is masked to the end of the
  // text, so later BEGIN lines are never rescanned.
  { kind: 'private-key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g, group: 0, needs: /PRIVATE KEY/ },

  // Model providers and hubs. `sk-` covers OpenAI (`sk-proj-…`), DeepSeek and Anthropic
  // (`sk-ant-api03-…`); a random body has a digit, a hyphenated word list ("sk-learn-…") does not.
  { kind: 'api-key', pattern: new RegExp(`${L}sk-[A-Za-z0-9_-]{20,}`, 'g'), group: 0, needs: /sk-/, accept: (v) => /[0-9]/.test(v) && /[A-Za-z]/.test(v.slice(3)) },
  token('api-key', /gsk_|r8_|xai-|pplx-/, 'gsk_[A-Za-z0-9]{48,56}|r8_[A-Za-z0-9]{37}|xai-[A-Za-z0-9]{70,90}|pplx-[A-Za-z0-9]{40,56}'),
  token('huggingface-token', /hf_|api_org_/, '(?:hf_|api_org_)[A-Za-z0-9]{30,40}'),

  // Package registries and code hosts.
  token('npm-token', /npm_/, 'npm_[A-Za-z0-9]{36}'),
  token('pypi-token', /pypi-/, 'pypi-Ag[A-Za-z0-9_-]{50,}'),
  token('github-token', /gh[pousr]_|github_pat_/, 'gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}'),
  token('gitlab-token', /gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|agent|oas|ft|wt)-|GR1348941/, 'gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|agent|oas|ft|wt)-[A-Za-z0-9_-]{20,}(?:\\.[A-Za-z0-9_-]{2,}){0,4}|GR1348941[A-Za-z0-9_-]{20,}'),
  token('docker-token', /dckr_/, 'dckr_(?:pat|oat)_[A-Za-z0-9_-]{24,}'),
  token('atlassian-token', /ATATT3/, 'ATATT3[A-Za-z0-9_=-]{100,}'),

  // Payment and messaging APIs.
  token('stripe-key', /[spr]k_(?:live|test)_|whsec_/, '(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{32,}'),
  token('slack-token', /xox|xapp-/, 'xox(?:[abposr]|e\\.xox[bp]|e)-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{20,}'),
  { kind: 'slack-webhook', pattern: /hooks\.slack\.com\/((?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,})/g, group: 1, needs: /hooks\.slack/ },
  { kind: 'discord-webhook', pattern: /discord(?:app)?\.com\/api\/webhooks\/([0-9]{15,22}\/[A-Za-z0-9_-]{40,80})/g, group: 1, needs: /discord/ },
  token('discord-token', /\.[A-Za-z0-9_-]{6}\./, '[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}'),
  { kind: 'telegram-bot-token', pattern: /(?<![0-9])[0-9]{6,12}:[A-Za-z0-9_-]{34,36}(?![A-Za-z0-9_-])/g, group: 0, needs: /[0-9]{6}:/, accept: (v) => looksRandom(v.slice(v.indexOf(':') + 1)) },
  token('twilio-key', /SK[0-9a-fA-F]/, 'SK[0-9a-fA-F]{32}'),
  token('sendgrid-key', /SG\./, 'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}'),
  token('mailgun-key', /key-/, 'key-[0-9a-f]{32}'),
  token('mailchimp-key', /-us[0-9]/, '[0-9a-f]{32}-us[0-9]{1,2}'),
  token('shopify-token', /shp[a-z]{2}_/, 'shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}'),

  // Cloud keys, recognisable without their label.
  { kind: 'aws-key', pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}(?![A-Z0-9])/g, group: 0, needs: /A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA)/ },
  token('google-api-key', /AIza/, 'AIza[0-9A-Za-z_-]{35}'),
  token('google-oauth', /GOCSPX-|ya29\./, 'GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[A-Za-z0-9_-]{30,}'),
  { kind: 'azure-key', pattern: /(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})/g, group: 1, needs: /AccountKey|SharedAccessKey/ },
  { kind: 'azure-sas', pattern: /[?&;]sig=([A-Za-z0-9%+/]{30,}={0,2})/g, group: 1, needs: /sig=/ },
  token('alibaba-key', /LTAI/, 'LTAI[A-Za-z0-9]{12,20}'),
  token('tencent-key', /AKID/, 'AKID[A-Za-z0-9]{32}'),
  token('digitalocean-token', /do[opr]_v1_/, 'do[opr]_v1_[a-f0-9]{64}'),
  token('age-key', /AGE-SECRET-KEY-/, 'AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}'),

  // Generic forms.
  { kind: 'jwt', pattern: new RegExp(`${L}eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}`, 'g'), group: 0, needs: /eyJ/ },
  { kind: 'bearer-token', pattern: /\b(?:Bearer|Basic)\s+([A-Za-z0-9._~+/-]{16,}=*)/gi, group: 1, needs: /bearer|basic/i },
  {
    kind: 'bearer-token',
    pattern: /\bAuthorization["']?\s*[:=]\s*["']?(?:(?:Bearer|Basic|token|Bot|Digest|ApiKey|Key|OAuth|SSWS|Token)[ \t]+)?([A-Za-z0-9._~+/=-]{8,512})/gi,
    group: 1, needs: /authorization/i,
    accept: (v) => looksRandom(v),
  },
  {
    // scheme://user:password@host — the password may hold '@', '/' or '#' written raw: the
    // greedy run backs off to the last '@' that is followed by a host. A port followed by a path
    // (host:8080/x?to=a@b.org after the scheme) is not a password.
    kind: 'url-password',
    pattern: /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@]{0,256}:(\S{1,256})@(?=[A-Za-z0-9[][A-Za-z0-9.:\]-]{0,253}(?:[/?#\s"'<>)]|$))/gi,
    group: 1, needs: /:\/\//,
    accept: (v) => !/^[0-9]{1,5}(?:[/?#]|$)/.test(v),
  },
  {
    // password=…, DB_PASSWORD: "…", "pwd":"…", 密码：…, 密码是 …, 口令为 …, 令牌 …
    kind: 'password',
    pattern: new RegExp(`(?:(?<![A-Za-z])(?:${PASSWORD_WORDS}|client[_-]?secret|api[_-]?key|access[_-]?key|secret[_-]?key|auth[_-]?token|access[_-]?token)["']?\\s*[:=：]|(?:${CJK_WORDS})["']?(?:\\s*(?:[:=：]|${CJK_VERBS}(?:\\s*[:：])?))?)\\s*${VALUE}`, 'gi'),
    group: 1, needs: NEEDS_PASSWORD,
  },
  {
    // A configuration line whose key is a password: the whole rest of the line, spaces included.
    kind: 'password',
    pattern: new RegExp(`(?:^|\\n)[ \\t]*(?:export[ \\t]+|-[ \\t]+)?[A-Za-z0-9_.-]{0,64}(?:${PASSWORD_WORDS})["']?[ \\t]*[:=][ \\t]*(\\[redacted [a-z-]{1,40}\\]|[^\\s"'][^\\n]{0,511})`, 'gi'),
    group: 1, needs: NEEDS_PASSWORD,
  },
  {
    // the password is …, password for the router was …
    kind: 'password',
    pattern: new RegExp(`(?<![A-Za-z])(?:${PASSWORD_WORDS})${QUALIFIER}[ \\t]+(?:${EN_VERBS})[ \\t]+${VALUE}`, 'gi'),
    group: 1, needs: NEEDS_PASSWORD,
    accept: (v) => looksTyped(v),
  },
  {
    // FOO_TOKEN=…, "api_key": "…", AWS_SECRET_ACCESS_KEY = …, secret_key_base: …
    kind: 'secret-assignment',
    // The keyword is matched first and the identifier's earlier segments are checked looking
    // back from it, so the scan skips to keywords instead of trying every word of the text.
    pattern: new RegExp(`((?:${KEY_WORDS})(?<=(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9]+[_.-]){0,8}(?:${KEY_WORDS}))(?:[_.-][A-Za-z0-9]+){0,4})["']?[ \\t]*(?:=|:(?!//))[ \\t]*${VALUE}`, 'gi'),
    group: 2, needs: NEEDS_KEY_WORD,
    accept: (v, m) => !NOT_SECRET_SUFFIX.test(m[1]!.split(/[_.-]/).pop()!) && looksRandom(v),
  },
  {
    // --password X, --db-password=X, --token X, --api-key=X
    kind: 'password',
    pattern: new RegExp(`(?<![A-Za-z0-9-])--(?:[a-z0-9]+-){0,4}(?:${PASSWORD_WORDS}|pass|token|secret|api-?key|access-key|secret-key|auth-token|client-secret)(?:[ \\t]+|=)(?!-)${VALUE}`, 'gi'),
    group: 1, needs: /--/,
    accept: (v) => looksTyped(v),
  },
  // mysql -pSECRET (attached; a bare -p prompts), sshpass -p SECRET, redis-cli -a SECRET,
  // docker login -p SECRET, curl -u user:SECRET
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump|mariadb-admin)${ARGS}-p${VALUE}`, 'g'), group: 1, needs: /mysql|mariadb/ },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])sshpass[ \\t]+-p[ \\t]*${VALUE}`, 'g'), group: 1, needs: /sshpass/ },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])redis-cli${ARGS}-a[ \\t]+${VALUE}`, 'g'), group: 1, needs: /redis-cli/ },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])(?:docker|podman|nerdctl|buildah|skopeo|helm)(?:[ \\t]+registry)?[ \\t]+login${ARGS}-p[ \\t]*${VALUE}`, 'g'), group: 1, needs: /login/ },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])curl${ARGS}(?:-u[ \\t]*|--user(?:[ \\t]+|=))["']?[^\\s:"']{1,256}:([^\\s"']{1,256})`, 'g'), group: 1, needs: /curl/ },
  ...PROSE_LABELS,
]

/**
 * Every shape's fragment, in two passes: the case-sensitive token prefixes, and the
 * case-insensitive labels. Most notes contain none, and for them no shape runs; a note that
 * only mentions a label runs only the labelled shapes. Two small alternations are cheaper than
 * one large case-insensitive one (measured by `bench:secrets`).
 */
export const TRIGGERS: readonly RegExp[] = [false, true].map((caseless) =>
  new RegExp([...new Set(SHAPES.filter((shape) => shape.needs.flags.includes('i') === caseless).map((shape) => shape.needs.source))].join('|'), caseless ? 'i' : ''))
