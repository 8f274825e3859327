/**
 * A webhook delivery harness for Node tests: a fresh app and database with an
 * injected clock and short retry settings (DELIVERY_ENV), whose `dispatch()`
 * runs `dispatchDue` once — retries become due by moving the clock, not by
 * waiting — plus reads of a subscription and its deliveries.
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { parseConfig, type AppConfig } from "../../src/config";
import { dispatchDue, type DispatchReport } from "../../src/services/webhooks/dispatch";
import { connect, type ApiClient } from "./client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "./node-target";
import type { DeliveryBody, WebhookBody } from "../scenarios/webhooks.scenarios";
import { Receiver } from "./webhook-receiver";

export const BASE_MS = 1000;
export const CAP_MS = 4000;
export const MAX_ATTEMPTS = 4;
export const DELIVERY_ENV = {
  WEBHOOK_RETRY_BASE_MS: String(BASE_MS),
  WEBHOOK_RETRY_CAP_MS: String(CAP_MS),
  WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
  WEBHOOK_TIMEOUT_MS: "5000",
};

export interface Harness {
  target: NodeTarget;
  api: ApiClient;
  key: string;
  config: AppConfig;
  clock: () => Date;
  /** Move the injected clock forward, ms. */
  advance(ms: number): void;
  dispatch(): Promise<DispatchReport>;
  deliveries(webhookId: number): Promise<DeliveryBody[]>;
  webhook(webhookId: number): Promise<WebhookBody>;
}

/** A fresh app + database with an injected clock (starting at the real time, so signatures stay within the 5-minute tolerance). */
export async function harness(env: Record<string, string> = {}): Promise<Harness> {
  let nowMs = Date.now();
  const clock = () => new Date(nowMs);
  const target = await nodeTarget({ ...DELIVERY_ENV, ...env }, { clock });
  const config = parseConfig({ ...TEST_ENV, ...DELIVERY_ENV, ...env });
  const api = await connect(target);
  const key = target.staffKey;
  return {
    target,
    api,
    key,
    config,
    clock,
    advance: (ms) => {
      nowMs += ms;
    },
    dispatch: () => dispatchDue(target.db, { config, now: clock, fetch: (input, init) => fetch(input, init) }),
    deliveries: async (webhookId) => {
      const res = await api.get<DeliveryBody[]>(`/webhooks/${webhookId}/deliveries?limit=100`, { key });
      expect(res.status).toBe(200);
      return res.body;
    },
    webhook: async (webhookId) => (await api.get<WebhookBody>(`/webhooks/${webhookId}`, { key })).body,
  };
}

/** A test file's delivery rig: one receiver for the file; a fresh harness and a receiver path of its own (`/tN`) for each test. */
export interface DeliveryRig {
  receiver: Receiver;
  h: Harness;
  path: string;
}

/** Register the hooks that keep a {@link DeliveryRig} for each test of the calling file. */
export function useDeliveryRig(): DeliveryRig {
  const rig = {} as DeliveryRig;
  let counter = 0;
  beforeAll(async () => {
    rig.receiver = await Receiver.start();
  });
  afterAll(async () => {
    await rig.receiver?.close();
  });
  beforeEach(async () => {
    rig.h = await harness();
    counter += 1;
    rig.path = `/t${counter}`;
  });
  afterEach(async () => {
    await rig.h?.target.close();
  });
  return rig;
}
