/**
 * Variants of one prepared query, one per combination of flags (which
 * optional filters apply: a fixed WHERE per variant keeps the indexes usable),
 * each built on first use and then kept for the process (STYLE.md §5).
 */

/**
 * `build(...flags)` memoised per combination of `flags`, for the life of the process.
 * @example const listQuery = variants((byStatus: boolean) => qb.select().from(pets).where(byStatus ? … : undefined).prepare());
 */
export function variants<F extends boolean[], Q>(build: (...flags: F) => Q): (...flags: F) => Q {
  const built = new Map<string, Q>();
  return (...flags) => {
    const key = flags.map((flag) => (flag ? "1" : "0")).join("");
    let query = built.get(key);
    if (query === undefined) {
      query = build(...flags);
      built.set(key, query);
    }
    return query;
  };
}
