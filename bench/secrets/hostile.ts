/**
 * Texts built to make the credential shapes backtrack: each repeats, up to the wanted size, a
 * fragment that almost matches one shape (a prefix without its body, a label without its value,
 * a URL without its '@'). Shared by `bench:secrets` (which times them) and
 * `test/reliability/secrets-shapes.test.ts` (which runs every one at 1 MB).
 */

/** The fragments, by the shape they aim at. */
export const HOSTILE_FRAGMENTS: ReadonlyArray<{ name: string, fragment: string }> = [
  { name: 'sk- prefix, short body', fragment: 'sk-aaaaaaaaaaaaaaaaaaa ' },
  { name: 'sk- long hyphenated body', fragment: 'sk-a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t-' },
  { name: 'token prefixes', fragment: 'ghp_ hf_ npm_ glpat- xoxb- SG. AIza LTAI AKID ' },
  { name: 'label without value', fragment: 'password= ' },
  { name: 'label then spaces', fragment: 'password      ' },
  { name: 'prose label, no verb', fragment: 'password for the router and ' },
  { name: 'identifier segments, no keyword', fragment: 'a_b.c-d_' },
  { name: 'identifier segments with keyword, no =', fragment: 'my_api_token_value ' },
  { name: 'URL user info without @', fragment: 'x://a:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' },
  { name: 'URL with @ and no host', fragment: 'db://u:p@@@@@@@@@@@@@@@@@@@@@@@ ' },
  { name: 'command words, no flag', fragment: 'mysql curl redis-cli docker login sshpass ' },
  { name: 'curl args without user', fragment: 'curl -x -y -z -w -v -q -s -k -L ' },
  { name: 'BEGIN without END', fragment: '-----BEGIN RSA PRIVATE KEY-----\n' },
  { name: 'CJK labels', fragment: '密码口令密钥令牌是为' },
  { name: 'JWT-like dots', fragment: 'eyJaaaaaaaa.eyJbbbbbbbb.' },
  { name: 'digits and colons', fragment: '1234567890:' },
  { name: 'Authorization without value', fragment: 'Authorization: Bearer ' },
  { name: 'long options', fragment: '--password --token --api-key ' },
  { name: 'quotes never closed', fragment: 'password="aaaaaaaa ' },
  { name: 'CJK label then a long run of spaces', fragment: `密码${' '.repeat(4094)}` },
  { name: 'prose key labels, no value', fragment: 'the key is token: secret 是 私钥为：api key = ' },
  { name: 'prose key label, qualifier, no verb', fragment: 'the api key for the billing service and ' },
  { name: 'key label then a long run of spaces', fragment: `key${' '.repeat(4093)}` },
  { name: 'prose key labels, ordinary values', fragment: 'the key is node-v22.19.0-linux-x64 token 是 user_12345678 ' },
]

/** `fragment` repeated to exactly `chars` characters (never ending inside a surrogate pair). */
export function hostileText(fragment: string, chars: number): string {
  const text = fragment.repeat(Math.ceil(chars / fragment.length)).slice(0, chars)
  return /[\uD800-\uDBFF]$/.test(text) ? text.slice(0, -1) : text
}
