/**
 * The page's static files (`lib/serve/static/`, copied to `dist/serve/static/` by the build):
 * one HTML file, its script and style sheet, and the UI strings. Served from a fixed list, never
 * by joining a path from the request, so no request can reach another file.
 */
import { readFileSync } from 'node:fs'

/** A static file: its bytes and content type. */
export interface Asset {
  body: Buffer
  type: string
}

/** URL path → file name under `static/`. */
const FILES: Readonly<Record<string, [string, string]>> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/i18n.js': ['i18n.js', 'text/javascript; charset=utf-8'],
  '/app.css': ['app.css', 'text/css; charset=utf-8'],
}

/** Loads every asset once (the files are small). */
export function loadAssets(): Map<string, Asset> {
  const dir = new URL('./static/', import.meta.url)
  const out = new Map<string, Asset>()
  for (const [path, [file, type]] of Object.entries(FILES)) out.set(path, { body: readFileSync(new URL(file, dir)), type })
  return out
}
