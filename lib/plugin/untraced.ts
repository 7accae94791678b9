/**
 * The service object behind cordis's tracing proxies, for the plugin's own per-turn calls.
 *
 * `ctx.stablemem` is not the service but a proxy that makes its methods see the caller's
 * context: every property read wraps the receiver (a new shadow context and two proxies) and
 * every `this.…` inside the method goes through them again, so a one-line counter costs 3–10 µs
 * of CPU instead of 0.1 µs, and resolving `ctx.stablemem` itself runs cordis's `internal/get`
 * waterfall (docs/benchmarks.md, "A whole turn"). The plugin's hot paths (the context line on
 * every step, the recall, the statistics) call the object itself. They must not register anything
 * through it: `stages.on` and `ctx.effect`-backed calls stay on the traced service, so that a
 * registration belongs to the caller's fiber.
 *
 * Cordis marks the wrapped object with the registry symbol `cordis.original`; should a later
 * version drop it, this returns `value` unchanged (correct, only slower).
 */
const ORIGINAL = Symbol.for('cordis.original')

/** `value` with every cordis tracing proxy around it removed. */
export function untraced<T extends object>(value: T): T {
  let current = value
  for (let inner = originalOf(current); inner !== undefined && inner !== current; inner = originalOf(current)) current = inner
  return current
}

function originalOf<T extends object>(value: T): T | undefined {
  return (value as Record<symbol, T | undefined>)[ORIGINAL]
}
