/** The Worker's webhook runs on a Cloudflare Queue (docs/webhooks.md#workers): delayed messages start a run at a due time or after a run that died. */
import { CLAIM_MS } from "../../services/webhooks/hold";

/** While a run lasts, every `everyMs` a message is made due within `horizonMs`, after its claims would end were it to die (`everyMs` + `CLAIM_MS`). */
export const WATCH = { everyMs: 5_000, horizonMs: 10_000 } as const;

/** The longest delay of a message, s (https://developers.cloudflare.com/queues/platform/limits/). */
const MAX_DELAY_S = 86_400;

/** The producer binding as used here (wrangler.toml `WEBHOOK_RUNS`, a `Queue`): the body names when the run is meant to start. */
export interface RunQueue {
  send(body: { at: string }, options: { delaySeconds: number }): Promise<unknown>;
}

/** An isolate's messages: a new one only when none of its own is due in the window asked for, so a burst of runs sends few. */
export class RunTimer {
  /** When this isolate's latest message is due, ms since the epoch. */
  private dueAt = 0;

  /** @param queue the producer binding (none: no message is sent, as in previews); @param failed receives a send's error. */
  constructor(
    private readonly queue: RunQueue | undefined,
    private readonly failed: (error: unknown) => void,
  ) {}

  /**
   * Make sure a message starts a run between `notBefore` and `at` (ms since the epoch; less than a second late, at least `minDelayS`
   * from `now`): sends one unless this isolate's latest is due in that window. Never throws.
   */
  async ensure(at: number, notBefore: number, now = Date.now(), minDelayS = 1): Promise<void> {
    if (!this.queue || (this.dueAt >= notBefore && this.dueAt < at + 1_000)) return;
    const delaySeconds = Math.min(MAX_DELAY_S, Math.max(minDelayS, Math.ceil((at - now) / 1_000)));
    this.dueAt = now + delaySeconds * 1_000;
    try {
      await this.queue.send({ at: new Date(this.dueAt).toISOString() }, { delaySeconds });
    } catch (error) {
      this.dueAt = 0; // none is due: the next call sends again
      this.failed(error);
    }
  }

  /** A run as soon as the queue delivers: sends a message unless one of this isolate's was due within the last second or is due within the next. */
  soon(now = Date.now()): Promise<void> {
    return this.ensure(now, now - 1_000, now, 0);
  }

  /** Run `work`, keeping a message due within `WATCH.horizonMs` while it lasts: its result. @throws what `work` throws. */
  async watching<T>(work: () => Promise<T>): Promise<T> {
    let sent = Promise.resolve();
    const tick = () => {
      const now = Date.now();
      sent = sent.then(() => this.ensure(now + WATCH.horizonMs, now + WATCH.everyMs + CLAIM_MS, now));
    };
    tick();
    const timer = setInterval(tick, WATCH.everyMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
      await sent;
    }
  }
}
