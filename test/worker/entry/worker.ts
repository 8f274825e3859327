/**
 * The Worker the Worker suite runs: src/worker.ts with production's connection limit per invocation (./connection-cap.ts, imported
 * first so that it wraps `fetch` before any module keeps it). `GET /__connection-cap` answers how many connections had to wait.
 */
import { capped, waited } from "./connection-cap";
import worker, { WebhookSender as Sender } from "../../../src/worker";

export { PurgeCoordinator } from "../../../src/worker";

/** The Worker's sender, each call one invocation under the limit. */
export class WebhookSender extends Sender {
  override send(...args: Parameters<Sender["send"]>) {
    return capped(() => super.send(...args));
  }
}

export default {
  fetch: (request, env, ctx) => (new URL(request.url).pathname === "/__connection-cap" ? Response.json(waited) : capped(() => worker.fetch(request, env, ctx))),
  scheduled: (controller, env, ctx) => capped(() => worker.scheduled(controller, env, ctx)),
  queue: (batch, env, ctx) => capped(() => worker.queue(batch, env, ctx)),
} satisfies ExportedHandler<Parameters<typeof worker.fetch>[1]>;
