/**
 * Webhook turns on Workers (docs/webhooks.md#workers): one Durable Object per subscription runs the turns of the claims a dispatch run
 * hands it, then claims its subscription again whenever it is due, waking by alarm; an evicted object's alarm runs again by itself.
 */
import { DurableObject } from "cloudflare:workers";
import { type WorkerSettings, workerSettings } from "../../config";
import type { Database } from "../../db/client";
import { consoleSink, jsonLogger, loggableError, withTraceFields } from "../../logger";
import type { SubscriptionClaim } from "../../services/webhooks/claims";
import { claimOwn, dueTime, SendSlots } from "../../services/webhooks/dispatch";
import { takeTurn } from "../../services/webhooks/turn";
import { DISPATCH_CONNECTIONS, logTurns } from "./dispatch-runs";
import { workerWebhookFetch } from "./webhook-fetch";

/** How long a sender whose turn sent nothing waits before it looks again, ms. */
const IDLE_MS = 1_000;

/** The binding the senders are reached by. */
export type SenderEnv = { WEBHOOK_SENDER?: DurableObjectNamespace<WebhookSender> };
/** A sender: the class `webhookSenderClass` makes. */
export type WebhookSender = InstanceType<ReturnType<typeof webhookSenderClass>>;

/** The sender of subscription `id`, or undefined without the binding (then a dispatch run sends itself). */
export function senderOf(env: SenderEnv, id: number): DurableObjectStub<WebhookSender> | undefined {
  return env.WEBHOOK_SENDER?.getByName(String(id));
}

/** The Durable Object class sending to one subscription (see the module docs; its name is the subscription id), opening `database` per alarm. */
export function webhookSenderClass(database: (settings: WorkerSettings) => Database) {
  return class WebhookSender extends DurableObject<SenderEnv> {
    private readonly handed: SubscriptionClaim[] = [];

    /** Run the turn of `claim` from the alarm, at once. */
    async take(claim: SubscriptionClaim): Promise<void> {
      this.handed.push(claim);
      await this.ctx.storage.setAlarm(Date.now());
    }

    /** Alarm: the handed claims' turns, then its own claims while its subscription is due; the next alarm at its next due time. */
    override async alarm(): Promise<void> {
      const id = Number(this.ctx.id.name);
      const settings = workerSettings(this.env as Record<string, unknown>);
      const config = settings.app;
      const logger = withTraceFields(jsonLogger(config.logLevel, consoleSink));
      const db = database(settings);
      const fetch = workerWebhookFetch({ egress: config.webhooks.egress, allowPrivate: config.webhooks.allowPrivateTargets });
      const slots = new SendSlots(DISPATCH_CONNECTIONS.sends);
      const send = { config, now: () => new Date(), fetch, random: Math.random, stop: () => false, slot: slots.run.bind(slots), quota: { left: 2000 } };
      try {
        let idle = false;
        for (
          let claim = this.handed.shift() ?? (await claimOwn(db, id, config));
          claim && !idle;
          claim = this.handed.shift() ?? (await claimOwn(db, id, config))
        ) {
          const report = await takeTurn(db, claim.s, { ...send, token: claim.token, claimedAt: new Date(claim.claimedAt) });
          await logTurns(logger, db, report);
          // A turn that sent nothing waits for the frontier to move (a dispatch run's fan-out): look again in a second at the earliest.
          idle = report.attempted === 0;
        }
        const next = await dueTime(db, id);
        if (next !== null) await this.ctx.storage.setAlarm(Math.max(Date.now() + (idle ? IDLE_MS : 0), Date.parse(next)));
      } catch (error) {
        logger.log("error", "webhook dispatch failed", { error: loggableError(error).message });
        throw error;
      }
    }
  };
}
