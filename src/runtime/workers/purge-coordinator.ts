/** The purge coordinator: one Durable Object per environment holding the purge state; its alarm calls the Worker back to purge (docs/caching.md). */
import { DurableObject } from "cloudflare:workers";
import { DEFAULT_PURGE_POLICY, initialPurgeState, type PurgeBatch, type PurgeOutcome, type PurgePolicy, PurgeScheduler, type PurgeState } from "./purge-budget";
import { type EdgePurgeOptions, sendPurge } from "./cache";
import { type WorkerSettings, workerSettings } from "../../config";

/** Path of the alarm's call back into the Worker (never cached: POST). */
export const PURGE_FLUSH_PATH = "/__edge-cache/flush";
const NONCE_HEADER = "X-Purge-Nonce";
/** The one coordinator of an environment. */
const COORDINATOR_NAME = "edge-cache";
/** Earliest next alarm after one whose call back took nothing (the Worker failed to answer), ms. */
const ALARM_RETRY_MS = 5_000;

/** The binding the coordinator is reached by. */
export type CoordinatorEnv = { PURGE_COORDINATOR?: DurableObjectNamespace<PurgeCoordinator> };

/** DEFAULT_PURGE_POLICY with the tests' overrides (the CACHE_PURGE_* variables) applied. */
function purgePolicy({ perMinute, burst, repeatAfterMs }: WorkerSettings["purge"]): PurgePolicy {
  const base = DEFAULT_PURGE_POLICY;
  const budget = { ...base.budget, perMinute: perMinute ?? base.budget.perMinute, burst: burst ?? base.budget.burst };
  return { ...base, budget, repeatAfterMs: repeatAfterMs ?? base.repeatAfterMs };
}

/** The coordinator stub of this environment, or undefined without the binding (previews: no edge cache). */
export function coordinatorOf(env: CoordinatorEnv): DurableObjectStub<PurgeCoordinator> | undefined {
  return env.PURGE_COORDINATOR?.getByName(COORDINATOR_NAME);
}

/** Durable Object holding the purge state of one environment (see the module docs). */
export class PurgeCoordinator extends DurableObject<CoordinatorEnv> {
  private scheduler = new PurgeScheduler(initialPurgeState(DEFAULT_PURGE_POLICY, Date.now()));
  private readonly nonces = new Set<string>();
  private flushed = false;

  constructor(ctx: DurableObjectState, env: CoordinatorEnv) {
    super(ctx, env);
    const policy = purgePolicy(workerSettings(env).purge);
    void ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.get<PurgeState>("state");
      this.scheduler = new PurgeScheduler(stored ?? initialPurgeState(policy, Date.now()), policy);
    });
  }

  /** Queue a write's tags (`source`: its request id); returns the batch to purge now, if one may be sent. */
  async submit(tags: string[], source: string): Promise<PurgeBatch | null> {
    const now = Date.now();
    this.scheduler.submit(tags, source, now);
    const batch = this.scheduler.take(now) ?? null;
    await this.save(now);
    return batch;
  }

  /** Report a batch's call: accepted or refused. */
  async settle(id: number, outcome: PurgeOutcome): Promise<void> {
    const now = Date.now();
    this.scheduler.settle(id, outcome, now);
    await this.save(now);
  }

  /** The due batch for the alarm's call back, when `nonce` is the one it sent (else null). */
  async takeForFlush(nonce: string): Promise<PurgeBatch | null> {
    if (!this.nonces.delete(nonce)) return null;
    this.flushed = true;
    const now = Date.now();
    const batch = this.scheduler.take(now) ?? null;
    await this.save(now);
    return batch;
  }

  /** Alarm: call the Worker back to send the due batch, then set the next alarm. */
  override async alarm(): Promise<void> {
    const nonce = crypto.randomUUID();
    this.nonces.add(nonce);
    this.flushed = false;
    const startedAt = Date.now();
    try {
      const exports = this.ctx.exports as unknown as { default: Fetcher };
      const res = await exports.default.fetch(`https://edge-cache.invalid${PURGE_FLUSH_PATH}`, { method: "POST", headers: { [NONCE_HEADER]: nonce } });
      await res.body?.cancel();
    } catch (error) {
      // Not rethrown: the next alarm is set below (a thrown alarm would also be retried by the runtime).
      console.error(`purge coordinator: call back failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      this.nonces.delete(nonce);
      await this.save(Date.now(), this.flushed ? 0 : startedAt + ALARM_RETRY_MS);
    }
  }

  /** Store the state and set the alarm for the next due batch (not before `notBefore`, ms). */
  private async save(now: number, notBefore = 0): Promise<void> {
    await this.ctx.storage.put("state", this.scheduler.state);
    const wakeAt = this.scheduler.nextWakeAt(now);
    if (wakeAt === undefined) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(wakeAt, notBefore));
  }
}

/** Whether `request` is the coordinator's call back (`POST PURGE_FLUSH_PATH` with a nonce); anything else goes to the app. */
export function isPurgeFlush(request: Request): boolean {
  return request.method === "POST" && request.headers.has(NONCE_HEADER) && new URL(request.url).pathname === PURGE_FLUSH_PATH;
}

/** Answer the coordinator's call back: purge the batch due for the request's nonce in this (the default) entrypoint; 204 always, without the live nonce a no-op. */
export async function flushPurges(
  request: Request,
  env: CoordinatorEnv,
  ctx: ExecutionContext,
  options: Pick<EdgePurgeOptions, "fallback" | "log">,
): Promise<Response> {
  const coordinator = coordinatorOf(env);
  const nonce = request.headers.get(NONCE_HEADER);
  if (coordinator && nonce) {
    const batch = await coordinator.takeForFlush(nonce);
    if (batch) {
      const outcome = await sendPurge(batch, ctx, options);
      await coordinator.settle(batch.id, outcome);
    }
  }
  return new Response(null, { status: 204 });
}
