/** Delivery attempts (docs/webhooks.md#design): POST one signed message, redirects not followed; a 2xx delivers it, else a `DeliveryError`. */
import type { AppConfig } from "../../config";
import type { DeliveryError } from "../../domain/webhooks";
import { isPrivateHost } from "../../domain/private-address";
import { signedWebhookHeaders } from "./signing";
import { context, propagation, SpanKind } from "@opentelemetry/api";
import { instruments } from "../../telemetry/metrics";
import { inSpan, linkTo } from "../../telemetry/spans";

/** `fetch` as deliveries use it (the runtime's; injectable for tests). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

/** Where subscription `webhookId`'s messages go, and the secrets that sign them (newest first). */
export interface Target {
  webhookId: number;
  url: string;
  secrets: string[];
}

/** One message to send: the event (0: a `webhook.test`), its `webhook-id` and the exact body. */
export interface Message {
  eventId: number;
  eventType: string;
  messageId: string;
  body: string;
  /** The committing write's W3C `traceparent`, if it was traced: the attempt span links to it. */
  traceparent: string | null;
}

/** What one attempt got: `ok` for a 2xx. */
export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: DeliveryError | null;
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NODATA", "EAI_FAIL", "EAI_NONAME"]);
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** The `DeliveryError` of a failed `fetch`: from the codes of its `cause` chain (Node, undici), else from its message's words (workerd). */
function classifyFetchError(error: unknown): DeliveryError {
  const codes: string[] = [];
  const messages: string[] = [];
  for (
    let e = error as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.name === "TimeoutError" || e.name === "AbortError") return "timeout";
    if (typeof e.code === "string") codes.push(e.code);
    if (typeof e.message === "string") messages.push(e.message);
  }
  if (codes.includes("EPRIVATEADDRESS")) return "private_address";
  if (codes.includes("ECONNREFUSED")) return "refused";
  if (codes.some((c) => DNS_CODES.has(c))) return "dns";
  if (codes.some((c) => TIMEOUT_CODES.has(c))) return "timeout";
  if (codes.some((c) => /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(c))) return "tls";
  const text = messages.join(" ");
  if (/\b(dns|resolve|lookup)\b/i.test(text)) return "dns";
  if (/refused/i.test(text)) return "refused";
  if (/\b(tls|ssl|certificate|handshake)\b/i.test(text)) return "tls";
  if (/timed? ?out/i.test(text)) return "timeout";
  return "network";
}

/** Send one signed attempt of `message` to `target` at `at`, in a client span linked to the committing write's trace (W3C `traceparent`). Never throws. */
export function attempt(target: Target, message: Message, options: { config: AppConfig; at: Date; fetch: FetchFn }): Promise<AttemptResult> {
  // The target's host only: a URL's path or query may hold a receiver's token.
  const host = new URL(target.url).hostname;
  const attributes = {
    "http.request.method": "POST",
    "server.address": host,
    "petstore.webhook.id": target.webhookId,
    "petstore.event.id": message.eventId,
    "petstore.event.type": message.eventType,
    "petstore.webhook.message_id": message.messageId,
  };
  return inSpan(
    "petstore.webhook.attempt",
    attributes,
    async (span) => {
      const result = await send(target, host, message, options);
      if (result.statusCode !== null) span.setAttribute("http.response.status_code", result.statusCode);
      return result;
    },
    { kind: SpanKind.CLIENT, links: linkTo(message.traceparent), duration: instruments().webhookAttemptDuration, failed: (result) => result.error },
  );
}

/** The attempt itself, to `target` whose URL names `host`. */
async function send(target: Target, host: string, message: Message, options: { config: AppConfig; at: Date; fetch: FetchFn }): Promise<AttemptResult> {
  const { webhooks: settings } = options.config;
  // IP literals are checked here; names by the runtime's fetch (docs/webhooks.md#targets).
  if (!settings.allowPrivateTargets && isPrivateHost(host)) {
    return { ok: false, statusCode: null, error: "private_address" };
  }
  const headers = signedWebhookHeaders(target.secrets, message.messageId, options.at, message.body);
  // W3C Trace Context (https://www.w3.org/TR/trace-context/): the attempt's span, when traces are on.
  propagation.inject(context.active(), headers);
  try {
    const res = await options.fetch(target.url, {
      method: "POST",
      headers,
      body: message.body,
      redirect: "manual",
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    await res.body?.cancel().catch(() => {});
    const ok = res.status >= 200 && res.status < 300;
    return { ok, statusCode: res.status, error: ok ? null : "http_status" };
  } catch (error) {
    return { ok: false, statusCode: null, error: classifyFetchError(error) };
  }
}
