/** Variants of a prepared query, one per combination of optional filters, built on first use and kept (docs/architecture.md#writes-one-batch-named-plans). */

/** Every `variants` family of the process, as "build every combination" functions (query-plan tests). */
const families: (() => unknown[])[] = [];

/**
 * `build(...flags)` memoised per combination of `flags`, for the life of the process.
 * @example const listQuery = variants((byStatus: boolean) => qb.select().from(pets).where(byStatus ? … : undefined).prepare());
 */
export function variants<F extends boolean[], Q>(build: (...flags: F) => Q): (...flags: F) => Q {
  const built = new Map<string, Q>();
  const get = (...flags: F) => {
    const key = flags.map((flag) => (flag ? "1" : "0")).join("");
    if (!built.has(key)) built.set(key, build(...flags));
    return built.get(key)!;
  };
  families.push(() =>
    Array.from({ length: 2 ** build.length }, (_, combination) =>
      get(...(Array.from({ length: build.length }, (_, bit) => ((combination >> bit) & 1) === 1) as F)),
    ),
  );
  return get;
}

/** Build every variant of every family defined so far (each flag combination), e.g. to plan them all. */
export function buildAllVariants(): unknown[] {
  return families.flatMap((all) => all());
}
