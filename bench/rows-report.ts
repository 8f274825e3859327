/**
 * The database bill as Markdown (`npm run bench -- --rows`, and the last
 * section of the default run): rows per operation (bench/rows.ts measures
 * them), the mix (90 % reads over its 5 reads, 10 % writes over its 2
 * writes), the background jobs per hour, and a month of a stated profile
 * beside the free quotas of Turso and Cloudflare D1. Pure.
 */
import { MAX_ROUNDS, PRUNE_BATCH } from "../src/services/retention";
import { type Rows, type RowsBill, SAMPLES } from "./rows";

/** The stated profile: requests per day in the mix's proportions, one Node process. */
const REQUESTS_PER_DAY = 1_000_000;
const DAYS = 30;
/** Free quotas per month: Turso (Free plan) and Cloudflare D1 (Workers Free: 5 M read, 100,000 written per day). */
const QUOTAS = [
  { name: "Turso Free", read: 500_000_000, written: 10_000_000 },
  { name: "D1 Workers Free", read: 5_000_000 * DAYS, written: 100_000 * DAYS },
];

const num = (x: number) => x.toLocaleString("en-US", { maximumFractionDigits: Number.isInteger(x) ? 0 : 1 });
/** Large counts: millions with two decimals, e.g. "12.34 M". */
const big = (x: number) => (x >= 1e6 ? `${(x / 1e6).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })} M` : num(Math.round(x)));
const table = (header: string[], body: string[][]) =>
  [header, header.map((_, i) => (i === 0 ? "---" : "---:")), ...body].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
const plural = (n: number, one: string, many = `${one}s`) => `${num(n)} ${n === 1 ? one : many}`;
const plus = (a: Rows, b: Rows): Rows => ({ read: a.read + b.read, written: a.written + b.written });
const times = (r: Rows, k: number): Rows => ({ read: r.read * k, written: r.written * k });

/**
 * The bill as Markdown tables: per operation, the mix, background jobs per hour, and a month of the
 * stated profile against free quotas. Rows marked "estimate" scale measured costs to the profile.
 */
export function formatRowsBill(bill: RowsBill): string {
  const { mix, idlePoll, retention, deliveryDelete } = bill;
  const writesPerHour = (REQUESTS_PER_DAY * mix.writeShare) / 24;
  const capacity = MAX_ROUNDS * PRUNE_BATCH;
  const cleared = retention.at(-1)!;
  // A run that deleted a full run's worth of events and nothing else: the cost when the log is long enough.
  const full = retention.find((r) => r.events === capacity && r.deleted === capacity) ?? retention[0]!;
  const eventsPerHour = writesPerHour * mix.createdPerWrite.events;
  const retentionLoad = plus(cleared, times(plus(full, times(cleared, -1)), Math.min(1, eventsPerHour / capacity)));
  const pruneDeliveries = times(deliveryDelete, mix.createdPerWrite.deliveries);
  const perRequest = (r: Rows) => [num(r.read), num(r.written)];
  const perHour = (r: Rows, runs: number) => [num(r.read), num(r.written), num(runs), big(r.read * runs), big(r.written * runs)];
  const label = (i: number, r: RowsBill["retention"][number]) =>
    `retention run ${i + 1}, ${i === 0 ? "dataset as generated" : r === cleared ? "backlog cleared" : "right after"} (${num(r.deleted)} rows deleted)`;
  const shown = retention.length <= 3 ? retention : [retention[0]!, retention[1]!, cleared];
  const hours = 24 * DAYS;
  const month = {
    requests: times(mix, REQUESTS_PER_DAY * DAYS),
    webhooks: times(plus(mix.webhookPerWrite, pruneDeliveries), writesPerHour * hours),
    poll: times(idlePoll, idlePoll.perHour * hours),
    retention: times(retentionLoad, hours),
  };
  const total = Object.values(month).reduce(plus, { read: 0, written: 0 });
  const pct = (x: number, quota: number) => (x >= quota ? `${(x / quota).toFixed(1)}× the quota` : `${((100 * x) / quota).toFixed(1)} %`);
  return [
    `Database bill: rows read and written as sqld counts them (what Turso and D1 bill), dataset ${Object.entries(bill.dataset)
      .filter(([, n]) => n > 1)
      .map(([t, n]) => `${t} ${num(n)}`)
      .join(", ")}.`,
    `Mean of ${SAMPLES} requests each (varied ids), warm key cache, no read cache: every request reaches the database.`,
    "",
    table(
      ["operation", "mix share", "read / req", "written / req", "dispatch run after it: read", "written", "created per write"],
      bill.operations.map((o) => [
        o.name,
        o.weight > 0 ? `${num(100 * o.weight)} %` : "–",
        ...perRequest(o),
        ...(o.webhook ? perRequest(o.webhook) : ["–", "–"]),
        o.created ? `${plural(o.created.events, "event")}, ${plural(o.created.deliveries, "delivery", "deliveries")}` : "–",
      ]),
    ),
    "",
    "The mix: 90 % reads over its 5 reads, 10 % writes over its 2 writes; one dispatchDue after each write (14 of 20 subscriptions take every event):",
    "",
    table(
      ["per", "rows read", "rows written"],
      [
        ["request of the mix (the request itself)", ...perRequest(mix)],
        ["write of the mix: the dispatch run it starts", ...perRequest(mix.webhookPerWrite)],
        ["request of the mix, with its webhook work", ...perRequest(plus(mix, times(mix.webhookPerWrite, mix.writeShare)))],
      ],
    ),
    "",
    `Background jobs of one Node process, per hour; under load: ${num(REQUESTS_PER_DAY)} requests/day in the mix = ${num(Math.round(writesPerHour))} writes/hour:`,
    "",
    table(
      ["job", "read / run", "written / run", "runs / hour", "read / hour", "written / hour"],
      [
        ["dispatcher idle: a timer's poll finding nothing due", ...perHour(idlePoll, idlePoll.perHour)],
        ...shown.map((r) => [label(retention.indexOf(r), r), ...perHour(r, 1)]),
        ["dispatcher under the mixed load: a run after each write", ...perHour(mix.webhookPerWrite, writesPerHour)],
        [
          `+ in those runs, pruning the deliveries finished 7 days before (estimate: ${num(mix.createdPerWrite.deliveries)} per write)`,
          ...perHour(pruneDeliveries, writesPerHour),
        ],
        [`retention under the mixed load (estimate: ${num(Math.min(eventsPerHour, capacity))} events deleted per run)`, ...perHour(retentionLoad, 1)],
      ],
    ),
    "",
    `Retention deletes at most ${num(capacity)} rows per table a run (${MAX_ROUNDS} rounds of ${PRUNE_BATCH}); the generated backlog took ${retention.length - 1} runs.`,
    `Estimates: deliveries pruned at ${num(deliveryDelete.read)} read and ${num(deliveryDelete.written)} written per row (retention run 1's pruning); retention under load between the run with nothing to delete and a full run, by the events expiring per hour.`,
    ...(eventsPerHour > capacity
      ? [
          `Note: the load commits ${num(Math.round(eventsPerHour))} events/hour, retention deletes at most ${num(capacity)}: expired events accumulate by ${num(Math.round(eventsPerHour - capacity))}/hour.`,
        ]
      : []),
    "",
    `A month (${DAYS} days) of ${num(REQUESTS_PER_DAY)} requests/day in the mix's proportions with their webhook work, and one Node process's background jobs:`,
    "",
    table(
      ["part", "rows read / month", "rows written / month"],
      [
        ["requests", big(month.requests.read), big(month.requests.written)],
        ["webhook dispatch after writes (with delivery pruning)", big(month.webhooks.read), big(month.webhooks.written)],
        ["dispatcher idle polls", big(month.poll.read), big(month.poll.written)],
        ["retention, hourly under the load", big(month.retention.read), big(month.retention.written)],
        ["**total**", `**${big(total.read)}**`, `**${big(total.written)}**`],
        ...QUOTAS.map((q) => [
          `free quota: ${q.name}`,
          `${big(q.read)} (total: ${pct(total.read, q.read)})`,
          `${big(q.written)} (total: ${pct(total.written, q.written)})`,
        ]),
      ],
    ),
  ].join("\n");
}
