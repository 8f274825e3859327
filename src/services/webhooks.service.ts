/**
 * Webhook subscriptions and their delivery log (API.md §6, experimental).
 *
 * A subscription is `{url, events[]}` plus a signing secret `whsec_…` that is
 * returned once, by the create call, and used by the dispatcher
 * (src/services/webhook-dispatcher.ts) to sign deliveries. `events` lists the
 * wanted event types, or is exactly `["*"]` for every type (including types
 * added later). A new subscription receives the events committed after it was
 * created; history is available from `GET /events`.
 *
 * Targets: only absolute http(s) URLs without credentials; unless
 * `config.webhooks.allowPrivateTargets`, hosts that are loopback, private,
 * link-local, unspecified, CGNAT, multicast or reserved IP literals (IPv4 in any
 * notation the WHATWG URL parser accepts, IPv6 including IPv4-mapped, NAT64 and
 * 6to4 forms) and `localhost` / `*.localhost` are refused. Host names are not
 * resolved here: a name's addresses can change, so they are checked at
 * delivery time, on the connection itself (Node: src/runtime/node-webhook-fetch.ts;
 * on Workers, Cloudflare's fetch cannot reach private destinations).
 */
import { and, count, eq, gt, lt, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { perDatabase, readBatch, step, writeBatch } from "../db/batch";
import { events as eventLog, webhookDeliveries, webhooks } from "../db/schema";
import { ApiError, notFound } from "../lib/errors";
import type { EventType } from "./events.service";
import { generateWebhookSecret } from "./webhook-signing";

/**
 * Why an attempt failed, coarsely (API.md §6; never the raw error text, which
 * would tell a subscriber about internal hosts and ports): `http_status` (a
 * non-2xx answer, see `lastStatusCode`), `timeout`, `refused` (connection
 * refused), `dns` (the name did not resolve), `tls` (handshake or
 * certificate), `private_address` (the target is or resolves to a loopback,
 * private or link-local address), `network` (anything else).
 */
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

/** Every `DeliveryError`. */
export const DELIVERY_ERRORS = ["http_status", "timeout", "refused", "dns", "tls", "private_address", "network"] as const;

export type WebhookStatus = "active" | "failing";
export type DeliveryStatus = "pending" | "delivered" | "failed";

/** Webhook subscription representation (never carries the secret). */
export interface Webhook {
  id: number;
  url: string;
  events: (EventType | "*")[];
  /** `failing` after a delivery was given up; back to `active` after the next success. */
  status: WebhookStatus;
  createdAt: string;
}

export interface NewWebhook {
  url: string;
  events: (EventType | "*")[];
}

/** One (subscription, event) delivery and its attempts so far. */
export interface WebhookDelivery {
  id: number;
  webhookId: number;
  eventId: number;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  /** While pending: when the next attempt is due. */
  nextAttemptAt?: string;
  lastAttemptAt?: string;
  /** HTTP status of the last attempt's response (absent when no response was received). */
  lastStatusCode?: number;
  /** Coarse reason of the last failed attempt (never raw error text). */
  lastError?: DeliveryError;
  deliveredAt?: string;
}

/** The columns of the Webhook representation. */
const WEBHOOK = { id: webhooks.id, url: webhooks.url, events: webhooks.events, status: webhooks.status, createdAt: webhooks.createdAt };

/** The statements of this module, prepared once per database. */
const queries = perDatabase((db) => {
  const subscriptions = db
    .select({ n: count().as("n") })
    .from(webhooks)
    .as("subscriptions");
  const lastEventId = db.select({ id: sql<number>`coalesce(max(${eventLog.id}), 0)` }).from(eventLog);
  return {
    /** Inserts only while fewer than `max` subscriptions exist: check and insert are one statement. */
    insert: db
      .insert(webhooks)
      .select(
        db
          .select({
            id: sql<number>`NULL`.as("id"),
            url: sql<string>`${sql.placeholder("url")}`.as("url"),
            events: sql<string>`${sql.placeholder("events")}`.as("events"),
            secret: sql<string>`${sql.placeholder("secret")}`.as("secret"),
            status: sql<WebhookStatus>`'active'`.as("status"),
            createdAt: sql<string>`${sql.placeholder("createdAt")}`.as("created_at"),
            lastEventId: sql<number>`${lastEventId}`.as("last_event_id"),
          })
          .from(subscriptions)
          .where(lt(subscriptions.n, sql.placeholder("max"))),
      )
      .returning(WEBHOOK)
      .prepare(),
    list: db
      .select(WEBHOOK)
      .from(webhooks)
      .where(gt(webhooks.id, sql.placeholder("afterId")))
      .orderBy(webhooks.id)
      .limit(sql.placeholder("limit"))
      .prepare(),
    get: db
      .select(WEBHOOK)
      .from(webhooks)
      .where(eq(webhooks.id, sql.placeholder("id")))
      .prepare(),
    exists: db
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(eq(webhooks.id, sql.placeholder("id")))
      .prepare(),
    deleteDeliveries: db
      .delete(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, sql.placeholder("id")))
      .prepare(),
    delete: db
      .delete(webhooks)
      .where(eq(webhooks.id, sql.placeholder("id")))
      .prepare(),
    /** Deliveries of `webhookId` after `afterId`, in `status` unless that is NULL. */
    deliveries: db
      .select({
        id: webhookDeliveries.id,
        webhookId: webhookDeliveries.webhookId,
        eventId: webhookDeliveries.eventId,
        eventType: eventLog.type,
        status: webhookDeliveries.status,
        attempts: webhookDeliveries.attempts,
        nextAttemptAt: webhookDeliveries.nextAttemptAt,
        lastAttemptAt: webhookDeliveries.lastAttemptAt,
        lastStatusCode: webhookDeliveries.lastStatusCode,
        lastError: webhookDeliveries.lastError,
        deliveredAt: webhookDeliveries.deliveredAt,
      })
      .from(webhookDeliveries)
      .innerJoin(eventLog, eq(eventLog.id, webhookDeliveries.eventId))
      .where(
        and(
          eq(webhookDeliveries.webhookId, sql.placeholder("webhookId")),
          gt(webhookDeliveries.id, sql.placeholder("afterId")),
          sql`(${sql.placeholder("status")} IS NULL OR ${webhookDeliveries.status} = ${sql.placeholder("status")})`,
        ),
      )
      .orderBy(webhookDeliveries.id)
      .limit(sql.placeholder("limit"))
      .prepare(),
  };
});

function toWebhook(row: { id: number; url: string; events: string; status: WebhookStatus; createdAt: string }): Webhook {
  return { id: row.id, url: row.url, events: JSON.parse(row.events) as Webhook["events"], status: row.status, createdAt: row.createdAt };
}

type DeliveryRow = Awaited<ReturnType<ReturnType<typeof queries>["deliveries"]["all"]>>[number];

function toDelivery(row: DeliveryRow): WebhookDelivery {
  const out: WebhookDelivery = {
    id: row.id,
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attempts: row.attempts,
  };
  if (out.status === "pending") out.nextAttemptAt = row.nextAttemptAt;
  if (row.lastAttemptAt !== null) out.lastAttemptAt = row.lastAttemptAt;
  if (row.lastStatusCode !== null) out.lastStatusCode = row.lastStatusCode;
  const lastError = DELIVERY_ERRORS.find((error) => error === row.lastError);
  if (lastError !== undefined) out.lastError = lastError;
  if (row.deliveredAt !== null) out.deliveredAt = row.deliveredAt;
  return out;
}

// ---------------------------------------------------------------- targets

/** IPv4 dotted quad → 32-bit number, or undefined. */
function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part) || Number(part) > 255) return undefined;
    value = value * 256 + Number(part);
  }
  return value;
}

/** IPv6 text (no brackets, no zone) → 8 groups of 16 bits, or undefined. */
function parseIPv6(text: string): number[] | undefined {
  let hex = text;
  if (hex.includes(".")) {
    // A trailing dotted quad stands for the last two groups (RFC 4291 §2.2).
    const lastColon = hex.lastIndexOf(":");
    const v4 = parseIPv4(hex.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    hex = `${hex.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = hex.split("::");
  if (halves.length > 2) return undefined;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const left = parse(halves[0]!);
  const right = halves.length === 2 ? parse(halves[1]!) : [];
  if ([...left, ...right].some(Number.isNaN)) return undefined;
  const explicit = left.length + right.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  return [...left, ...Array<number>(8 - explicit).fill(0), ...right];
}

/** CIDR blocks of IPv4 that are not public unicast destinations (RFC 6890 and friends). */
const PRIVATE_V4: [base: string, bits: number][] = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private (RFC 1918)
  ["100.64.0.0", 10], // shared address space, CGNAT (RFC 6598)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata endpoints
  ["172.16.0.0", 12], // private (RFC 1918)
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // private (RFC 1918)
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

function isPrivateV4(address: number): boolean {
  return PRIVATE_V4.some(([base, bits]) => {
    const size = 2 ** (32 - bits);
    const start = parseIPv4(base)!;
    return address >= start && address < start + size;
  });
}

function isPrivateV6(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => isPrivateV4(hi * 65536 + lo);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return true; // :: unspecified
  if (zeros(0, 7) && g[7] === 1) return true; // ::1 loopback
  if (zeros(0, 5) && g[5] === 0xffff) return embeddedV4(g[6]!, g[7]!); // ::ffff:a.b.c.d mapped
  if (zeros(0, 6)) return embeddedV4(g[6]!, g[7]!); // ::a.b.c.d compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embeddedV4(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return embeddedV4(g[1]!, g[2]!); // 6to4
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/**
 * True when `hostname` (as `URL.hostname` gives it: IPv4 normalised to a dotted
 * quad, IPv6 in brackets) names a loopback, private, link-local or otherwise
 * non-public address, or is `localhost` / `*.localhost` (RFC 6761 §6.3).
 */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseIPv6(host.slice(1, -1));
    return groups === undefined ? true : isPrivateV6(groups);
  }
  const v4 = parseIPv4(host);
  return v4 !== undefined && isPrivateV4(v4);
}

/**
 * True when `address` (an IP address as DNS resolution returns it: dotted
 * IPv4, or IPv6 without brackets, optionally with a `%zone`) is loopback,
 * private, link-local or otherwise non-public — the same ranges as
 * `isPrivateHost`. Anything that does not parse counts as private (refused).
 */
export function isPrivateAddress(address: string): boolean {
  if (address.includes(":")) {
    const groups = parseIPv6(address.replace(/%.*$/, ""));
    return groups === undefined ? true : isPrivateV6(groups);
  }
  const v4 = parseIPv4(address);
  return v4 === undefined ? true : isPrivateV4(v4);
}

/**
 * Why `raw` cannot be a webhook target, or undefined when it can.
 * Rules: absolute http(s) URL, at most 2000 characters, no credentials, and no
 * private host unless `allowPrivate` (see `isPrivateHost`).
 */
export function webhookTargetProblem(raw: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "Must be an absolute http(s) URL.";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "Only http and https URLs are allowed.";
  if (url.username || url.password) return "Credentials in the URL are not allowed.";
  if (url.href.length > 2000) return "At most 2000 characters.";
  if (!allowPrivate && isPrivateHost(url.hostname)) {
    return "Loopback, private and link-local targets are not allowed.";
  }
  return undefined;
}

// ---------------------------------------------------------------- subscriptions

/** Most subscriptions that may exist at once (API.md §6). */
export const MAX_WEBHOOKS = 50;

/**
 * Create a subscription that receives the events committed after it (its
 * fan-out cursor starts at the current last event id). Returns it with its
 * secret, which is never shown again. The limit check and the insert are one
 * statement, so concurrent calls never pass `MAX_WEBHOOKS`.
 * @throws ApiError 400 `validation_error` (path `body.url`) for a refused target.
 * @throws ApiError 409 `subscription_limit_reached` when `MAX_WEBHOOKS` exist.
 */
export async function createWebhook(db: Database, input: NewWebhook, allowPrivateTargets: boolean, now: Date): Promise<{ webhook: Webhook; secret: string }> {
  const problem = webhookTargetProblem(input.url, allowPrivateTargets);
  if (problem) {
    throw new ApiError(400, "validation_error", "The request is invalid; see details.", [{ path: "body.url", message: problem }]);
  }
  const url = new URL(input.url).href;
  const events = [...new Set(input.events)];
  const secret = generateWebhookSecret();
  const [row] = await queries(db).insert.all({ url, events: JSON.stringify(events), secret, createdAt: now.toISOString(), max: MAX_WEBHOOKS });
  if (!row) {
    throw new ApiError(
      409,
      "subscription_limit_reached",
      `At most ${MAX_WEBHOOKS} webhook subscriptions may exist; delete one (DELETE /webhooks/{webhookId}) first.`,
    );
  }
  return { webhook: toWebhook(row), secret };
}

/** Up to `limit` subscriptions with id > `afterId`, ascending. One round trip. */
export async function listWebhooks(db: Database, afterId: number, limit: number): Promise<Webhook[]> {
  const rows = await queries(db).list.all({ afterId, limit });
  return rows.map(toWebhook);
}

/** @throws ApiError 404 when absent. */
export async function getWebhook(db: Database, webhookId: number): Promise<Webhook> {
  const row = await queries(db).get.get({ id: webhookId });
  if (!row) throw notFound("Webhook", webhookId);
  return toWebhook(row);
}

/**
 * Delete a subscription and its delivery log in one batch; nothing more is
 * delivered to it (an attempt already in flight may still arrive).
 * @throws ApiError 404 when absent.
 */
export async function deleteWebhook(db: Database, webhookId: number): Promise<void> {
  const q = queries(db);
  const [, deleted] = await writeBatch(db, [step(q.deleteDeliveries, { id: webhookId }), step(q.delete, { id: webhookId })] as const);
  if (deleted.rowsAffected !== 1) throw notFound("Webhook", webhookId);
}

/**
 * Up to `limit` deliveries of a subscription with id > `afterId`, ascending
 * (i.e. in event order), optionally only those in `status`. One round trip.
 * @throws ApiError 404 when the subscription does not exist.
 */
export async function listDeliveries(db: Database, webhookId: number, afterId: number, limit: number, status?: DeliveryStatus): Promise<WebhookDelivery[]> {
  const q = queries(db);
  const [[subscription], rows] = await readBatch(db, [
    step(q.exists, { id: webhookId }),
    step(q.deliveries, { webhookId, afterId, status: status ?? null, limit }),
  ] as const);
  if (!subscription) throw notFound("Webhook", webhookId);
  return rows.map(toDelivery);
}
