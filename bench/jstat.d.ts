/** The one function of jstat (no types of its own) the benchmarks use. */
declare module 'jstat' {
  const jStat: {
    /** The regularized incomplete beta function I_x(a, b). */
    ibeta(x: number, a: number, b: number): number
  }
  export default jStat
}
