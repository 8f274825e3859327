/** WebhookDispatcher.nudgeSoon: a burst of writes becomes one dispatch run (fake timers, no sleeping). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebhookDispatcher } from "../../src/services/webhooks/dispatch";

afterEach(() => {
  vi.useRealTimers();
});

describe("WebhookDispatcher.nudgeSoon", () => {
  it("coalesces a burst of nudges into one run after the delay, then accepts the next burst", async () => {
    vi.useFakeTimers();
    let runs = 0;
    const dispatcher = new WebhookDispatcher(async () => {
      runs += 1;
    });
    for (let i = 0; i < 100; i++) dispatcher.nudgeSoon(50);
    expect(runs).toBe(0);
    await vi.advanceTimersByTimeAsync(49);
    expect(runs).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(1);
    dispatcher.nudgeSoon(50);
    await vi.advanceTimersByTimeAsync(50);
    expect(runs).toBe(2);
  });

  it("stop() cancels a scheduled run", async () => {
    vi.useFakeTimers();
    let runs = 0;
    const dispatcher = new WebhookDispatcher(async () => {
      runs += 1;
    });
    dispatcher.nudgeSoon(50);
    await dispatcher.stop();
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toBe(0);
  });
});
