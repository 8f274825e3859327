/**
 * The Worker's queued webhook runs (src/runtime/workers/run-queue.ts, docs/webhooks.md#workers), against a recording stand-in of the
 * queue binding and an injected clock: a message at a due time, none twice for one window, one at once when a run is full, while a
 * run lasts one due after the claims it would leave were it to die, and a failed send reported and sent again by the next call.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RunTimer, WATCH } from "../../src/runtime/workers/run-queue";

type Sent = { at: string; delaySeconds: number };
const T0 = Date.parse("2026-11-29T12:00:00.000Z");

/** A queue binding that records each message, or throws while `down`. */
function recordingQueue() {
  const sent: Sent[] = [];
  const queue = {
    down: false,
    send: async (body: { at: string }, options: { delaySeconds: number }) => {
      if (queue.down) throw new Error("queue unavailable");
      sent.push({ at: body.at, delaySeconds: options.delaySeconds });
    },
  };
  return { queue, sent };
}

describe("RunTimer", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends a message due at a retry's time, at most a second late, and none again for that window", async () => {
    const { queue, sent } = recordingQueue();
    const timer = new RunTimer(queue, () => {});
    await timer.ensure(T0 + 2_500, T0, T0);
    await timer.ensure(T0 + 2_900, T0 + 100, T0 + 100);
    expect(sent).toEqual([{ at: new Date(T0 + 3_000).toISOString(), delaySeconds: 3 }]);
    // One due before it covers a later time too: its run asks again when it ends.
    await timer.ensure(T0 + 60_000, T0 + 200, T0 + 200);
    expect(sent).toHaveLength(1);
    await timer.ensure(T0 + 60_000, T0 + 3_500, T0 + 3_500);
    expect(sent.at(-1)).toEqual({ at: new Date(T0 + 60_500).toISOString(), delaySeconds: 57 });
  });

  it("sends one message at once when a run is full, not two within a second", async () => {
    const { queue, sent } = recordingQueue();
    const timer = new RunTimer(queue, () => {});
    await timer.soon(T0);
    await timer.soon(T0 + 400);
    expect(sent).toEqual([{ at: new Date(T0).toISOString(), delaySeconds: 0 }]);
    await timer.soon(T0 + 1_500);
    expect(sent).toHaveLength(2);
  });

  it("keeps a message due after the claims a dying run would leave (2 s), within 11 s, while a run lasts; none after it", async () => {
    const { queue, sent } = recordingQueue();
    const timer = new RunTimer(queue, () => {});
    let finish = () => {};
    const run = timer.watching(() => new Promise<void>((resolve) => (finish = resolve)));
    for (let t = 0; t <= 30_000; t += 500) {
      await vi.advanceTimersByTimeAsync(500);
      // Were the run to die now, its claims would end within CLAIM_MS (2 s): a message is due after that, and soon after.
      const ahead = sent.map((m) => Date.parse(m.at) - Date.now()).filter((ms) => ms > 2_000);
      expect(ahead.length, `at ${t + 500} ms`).toBeGreaterThan(0);
      expect(Math.min(...ahead), `at ${t + 500} ms`).toBeLessThanOrEqual(11_000);
    }
    expect(sent.every((m) => m.delaySeconds === WATCH.horizonMs / 1_000)).toBe(true);
    expect(sent.length).toBeLessThanOrEqual(30_000 / WATCH.everyMs + 1);
    finish();
    await run;
    const count = sent.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent).toHaveLength(count);
  });

  it("reports a failed send, and the next call sends again", async () => {
    const { queue, sent } = recordingQueue();
    const failures: unknown[] = [];
    const timer = new RunTimer(queue, (error) => failures.push(error));
    queue.down = true;
    await timer.ensure(T0 + 5_000, T0, T0);
    expect(failures).toHaveLength(1);
    queue.down = false;
    await timer.ensure(T0 + 5_000, T0, T0);
    expect(sent).toEqual([{ at: new Date(T0 + 5_000).toISOString(), delaySeconds: 5 }]);
  });

  it("sends nothing without a queue binding (a preview Worker)", async () => {
    const timer = new RunTimer(undefined, () => {});
    await expect(timer.ensure(T0 + 5_000, T0, T0)).resolves.toBeUndefined();
    await expect(timer.watching(async () => 7)).resolves.toBe(7);
  });
});
