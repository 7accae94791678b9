/**
 * Lines of a file for `stablemem import`, read as bytes in chunks so that memory stays bounded:
 * a line that is not valid UTF-8 is refused (never silently replaced by U+FFFD), and a line
 * longer than `maxBytes` is refused as soon as it is that long, instead of being buffered whole
 * (a 600 MB file without a newline). The error is thrown where the line would be, so the
 * importer reports it with that line's number.
 */
import { createReadStream } from 'node:fs'
import { StableMemError } from '../errors.ts'

/**
 * Longest accepted line, in bytes. The longest line an export writes is one block at
 * `maxBlockChars` (32,768 by default) escaped as JSON (up to 6 bytes per UTF-16 unit) with its
 * tags: about 200 KB. 16 MiB leaves room for a larger configured limit.
 */
export const MAX_LINE_BYTES = 16 << 20

/** Progress of the read, for a progress line. */
export interface ReadProgress {
  bytesRead: number
}

/** The file's lines without their `\n` (and a trailing `\r`), decoded strictly as UTF-8. */
export async function * fileLines(path: string, progress: ReadProgress = { bytesRead: 0 }, maxBytes = MAX_LINE_BYTES): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  let parts: Buffer[] = []
  let pending = 0
  const line = (bytes: Buffer): string => {
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length
    try {
      return decoder.decode(bytes.subarray(0, end))
    } catch {
      throw new StableMemError('invalid_input', 'not valid UTF-8')
    }
  }
  const tooLong = () => new StableMemError('too_large', `line is longer than ${maxBytes} bytes; an export line is one block (a few hundred KB at most), so this is not a dsh-stablemem export`)
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    progress.bytesRead += chunk.length
    let start = 0
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      if (pending + nl - start > maxBytes) throw tooLong()
      const piece = chunk.subarray(start, nl)
      yield line(parts.length === 0 ? piece : Buffer.concat([...parts, piece]))
      parts = []
      pending = 0
      start = nl + 1
    }
    if (start < chunk.length) {
      pending += chunk.length - start
      if (pending > maxBytes) throw tooLong()
      parts.push(chunk.subarray(start))
    }
  }
  if (pending > 0) yield line(Buffer.concat(parts))
}
