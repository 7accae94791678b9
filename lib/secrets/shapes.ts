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

/** One credential shape. `group` is the capture group holding the secret part (0 = whole match). */
export interface SecretShape {
  kind: string
  pattern: RegExp
  group: number
  /** A further test of the captured value; a match it rejects is not a credential. */
  accept?: (value: string, match: RegExpMatchArray) => boolean
}

/** Left and right edges of a token: not inside a longer run of token characters. */
const L = '(?<![A-Za-z0-9_-])'
const R = '(?![A-Za-z0-9_-])'

/** A token with a fixed published prefix and body. */
function token(kind: string, body: string): SecretShape {
  return { kind, pattern: new RegExp(`${L}(?:${body})${R}`, 'g'), group: 0 }
}

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

/** The last part of an identifier that names something about a secret, not the secret itself. */
const NOT_SECRET_SUFFIX = /^(?:file|path|dir|id|name|url|uri|host|port|user|username|type|len|length|size|ttl|expiry|expires|expiration|timeout|region|endpoint|header|field|prefix|alg|algorithm|version|count|enabled|mode|policy|format|env|hint|rotation|label)$/i

/** Values that look like a random credential: at least 8 characters, no space, two of lower / upper / digit. */
export function looksRandom(value: string): boolean {
  const v = unquote(value)
  if (v.length < 8 || /\s/.test(v)) return false
  return [/[a-z]/, /[A-Z]/, /[0-9]/].filter((re) => re.test(v)).length >= 2
}

/**
 * Values a person typed as a password in prose or on a command line: four characters or more
 * with a digit, a symbol or an upper-case letter after the first. Plain words ("required",
 * "incorrect") are the sentence going on, not a password; quoted values always count.
 */
export function looksTyped(value: string): boolean {
  if (/^["'`“‘「『]/.test(value)) return unquote(value).trim().length > 0
  const v = value.replace(/[.,;:!?)\]]+$/, '')
  return v.length >= 4 && (/[0-9]/.test(v) || /[^A-Za-z0-9]/.test(v) || /^.+[A-Z]/.test(v))
}

function unquote(value: string): string {
  return /^["'`“‘「『]/.test(value) ? value.slice(1, -1) : value
}

/** The arguments before a command's password flag: at most 24, never past a shell separator (`;`, `|`, `&`). */
const ARGS = '(?:[ \\t]+[^\\s;|&]{1,256}){0,24}?[ \\t]+'

export const SHAPES: readonly SecretShape[] = [
  // PEM / OpenSSH / PGP private keys. A key without its END line is masked to the end of the
  // text, so later BEGIN lines are never rescanned.
  { kind: 'private-key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g, group: 0 },

  // Model providers and hubs. `sk-` covers OpenAI (`sk-proj-…`), DeepSeek and Anthropic
  // (`sk-ant-api03-…`); a random body has a digit, a hyphenated word list ("sk-learn-…") does not.
  { kind: 'api-key', pattern: new RegExp(`${L}sk-[A-Za-z0-9_-]{20,}`, 'g'), group: 0, accept: (v) => /[0-9]/.test(v) && /[A-Za-z]/.test(v.slice(3)) },
  token('api-key', 'gsk_[A-Za-z0-9]{48,56}|r8_[A-Za-z0-9]{37}|xai-[A-Za-z0-9]{70,90}|pplx-[A-Za-z0-9]{40,56}'),
  token('huggingface-token', '(?:hf_|api_org_)[A-Za-z0-9]{30,40}'),

  // Package registries and code hosts.
  token('npm-token', 'npm_[A-Za-z0-9]{36}'),
  token('pypi-token', 'pypi-Ag[A-Za-z0-9_-]{50,}'),
  token('github-token', 'gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}'),
  token('gitlab-token', 'gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|agent|oas|ft|wt)-[A-Za-z0-9_-]{20,}(?:\\.[A-Za-z0-9_-]{2,}){0,4}|GR1348941[A-Za-z0-9_-]{20,}'),
  token('docker-token', 'dckr_(?:pat|oat)_[A-Za-z0-9_-]{24,}'),
  token('atlassian-token', 'ATATT3[A-Za-z0-9_=-]{100,}'),

  // Payment and messaging APIs.
  token('stripe-key', '(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{32,}'),
  token('slack-token', 'xox(?:[abposr]|e\\.xox[bp]|e)-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{20,}'),
  { kind: 'slack-webhook', pattern: /hooks\.slack\.com\/((?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,})/g, group: 1 },
  { kind: 'discord-webhook', pattern: /discord(?:app)?\.com\/api\/webhooks\/([0-9]{15,22}\/[A-Za-z0-9_-]{40,80})/g, group: 1 },
  token('discord-token', '[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}'),
  { kind: 'telegram-bot-token', pattern: /(?<![0-9])[0-9]{6,12}:[A-Za-z0-9_-]{34,36}(?![A-Za-z0-9_-])/g, group: 0, accept: (v) => looksRandom(v.slice(v.indexOf(':') + 1)) },
  token('twilio-key', 'SK[0-9a-fA-F]{32}'),
  token('sendgrid-key', 'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}'),
  token('mailgun-key', 'key-[0-9a-f]{32}'),
  token('mailchimp-key', '[0-9a-f]{32}-us[0-9]{1,2}'),
  token('shopify-token', 'shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}'),

  // Cloud keys, recognisable without their label.
  { kind: 'aws-key', pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}(?![A-Z0-9])/g, group: 0 },
  token('google-api-key', 'AIza[0-9A-Za-z_-]{35}'),
  token('google-oauth', 'GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[A-Za-z0-9_-]{30,}'),
  { kind: 'azure-key', pattern: /(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})/g, group: 1 },
  { kind: 'azure-sas', pattern: /[?&;]sig=([A-Za-z0-9%+/]{30,}={0,2})/g, group: 1 },
  token('alibaba-key', 'LTAI[A-Za-z0-9]{12,20}'),
  token('tencent-key', 'AKID[A-Za-z0-9]{32}'),
  token('digitalocean-token', 'do[opr]_v1_[a-f0-9]{64}'),
  token('age-key', 'AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}'),

  // Generic forms.
  { kind: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { kind: 'bearer-token', pattern: /\b(?:Bearer|Basic)\s+([A-Za-z0-9._~+/-]{16,}=*)/gi, group: 1 },
  {
    kind: 'bearer-token',
    pattern: /\bAuthorization["']?\s*[:=]\s*["']?(?:(?:Bearer|Basic|token|Bot|Digest|ApiKey|Key|OAuth|SSWS|Token)[ \t]+)?([A-Za-z0-9._~+/=-]{8,512})/gi,
    group: 1,
    accept: (v) => looksRandom(v),
  },
  {
    // scheme://user:password@host — the password may hold '@', '/' or '#' written raw: the
    // greedy run backs off to the last '@' that is followed by a host. A port followed by a path
    // ("http://host:8080/x?to=a@b.org") is not a password.
    kind: 'url-password',
    pattern: /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@]{0,256}:(\S{1,256})@(?=[A-Za-z0-9[][A-Za-z0-9.:\]-]{0,253}(?:[/?#\s"'<>)]|$))/gi,
    group: 1,
    accept: (v) => !/^[0-9]{1,5}(?:[/?#]|$)/.test(v),
  },
  {
    // password=…, DB_PASSWORD: "…", "pwd":"…", 密码：…, 密码是 …, 口令为 …, 令牌 …
    kind: 'password',
    pattern: new RegExp(`(?:(?<![A-Za-z])(?:${PASSWORD_WORDS}|client[_-]?secret|api[_-]?key|access[_-]?key|secret[_-]?key|auth[_-]?token|access[_-]?token)["']?\\s*[:=：]|(?:${CJK_WORDS})["']?\\s*(?:[:=：]|是|为|改成了?|改为|设为|设置为)?)\\s*${VALUE}`, 'gi'),
    group: 1,
  },
  {
    // A configuration line whose key is a password: the whole rest of the line, spaces included.
    kind: 'password',
    pattern: new RegExp(`(?:^|\\n)[ \\t]*(?:export[ \\t]+|-[ \\t]+)?[A-Za-z0-9_.-]{0,64}(?:${PASSWORD_WORDS})["']?[ \\t]*[:=][ \\t]*(\\[redacted [a-z-]{1,40}\\]|[^\\s"'][^\\n]{0,511})`, 'gi'),
    group: 1,
  },
  {
    // the password is …, password for the router was …
    kind: 'password',
    pattern: new RegExp(`(?<![A-Za-z])(?:${PASSWORD_WORDS})(?:[ \\t]+(?:for|of|to|on)[ \\t]+[^\\n.,;:]{1,40}?)?[ \\t]+(?:is|was|is now|was changed to|changed to|set to)[ \\t]+${VALUE}`, 'gi'),
    group: 1,
    accept: (v) => looksTyped(v),
  },
  {
    // FOO_TOKEN=…, "api_key": "…", AWS_SECRET_ACCESS_KEY = …, secret_key_base: …
    kind: 'secret-assignment',
    pattern: new RegExp(`(?<![A-Za-z0-9_.-])((?:[A-Za-z0-9]+[_.-]){0,8}(?:${KEY_WORDS})(?:[_.-][A-Za-z0-9]+){0,4})["']?[ \\t]*(?:=|:(?!//))[ \\t]*${VALUE}`, 'gi'),
    group: 2,
    accept: (v, m) => !NOT_SECRET_SUFFIX.test(m[1]!.split(/[_.-]/).pop()!) && looksRandom(v),
  },
  {
    // --password X, --db-password=X, --token X, --api-key=X
    kind: 'password',
    pattern: new RegExp(`(?<![A-Za-z0-9-])--(?:[a-z0-9]+-){0,4}(?:${PASSWORD_WORDS}|pass|token|secret|api-?key|access-key|secret-key|auth-token|client-secret)(?:[ \\t]+|=)(?!-)${VALUE}`, 'gi'),
    group: 1,
    accept: (v) => looksTyped(v),
  },
  // mysql -pSECRET (attached; a bare -p prompts), sshpass -p SECRET, redis-cli -a SECRET,
  // docker login -p SECRET, curl -u user:SECRET
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump|mariadb-admin)${ARGS}-p${VALUE}`, 'g'), group: 1 },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])sshpass[ \\t]+-p[ \\t]*${VALUE}`, 'g'), group: 1 },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])redis-cli${ARGS}-a[ \\t]+${VALUE}`, 'g'), group: 1 },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])(?:docker|podman|nerdctl|buildah|skopeo|helm)(?:[ \\t]+registry)?[ \\t]+login${ARGS}-p[ \\t]*${VALUE}`, 'g'), group: 1 },
  { kind: 'password', pattern: new RegExp(`(?<![A-Za-z0-9_-])curl${ARGS}(?:-u[ \\t]*|--user(?:[ \\t]+|=))["']?[^\\s:"']{1,256}:([^\\s"']{1,256})`, 'g'), group: 1 },
]

/**
 * A fragment every shape above needs, found in one pass. Most notes contain none, and for them
 * the shapes never run: the commit path stays cheap (measured by `bench:secrets`).
 */
export const TRIGGER = new RegExp([
  'sk-', '[sprk]k_', 'whsec_', 'gsk_', 'r8_', 'xai-', 'pplx-', 'hf_', 'api_org_', 'npm_', 'pypi-', 'gh[pousr]_', 'github_pat_', 'gl[a-z]{1,5}-', 'GR1348941',
  'dckr_', 'ATATT3', 'xox', 'xapp-', 'hooks\\.slack', 'discord', '\\.[A-Za-z0-9_-]{6}\\.', '[0-9]{6}:', 'SK[0-9a-f]', 'SG\\.', 'key-', '-us[0-9]', 'shp[a-z]{2}_',
  'A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|Iza)', 'GOCSPX', 'ya29', 'AccountKey', 'SharedAccess', 'sig=', 'LTAI', 'AKID', 'do[opr]_', 'AGE-SECRET',
  'eyJ', 'bearer', 'basic', 'authori', ':\\/\\/', 'PRIVATE KEY', 'pass', 'pwd', 'secret', 'key', 'token', 'cred', 'auth',
  'sshpass', 'redis-cli', 'login', 'curl', 'mysql', 'mariadb', CJK_WORDS,
].join('|'), 'i')
