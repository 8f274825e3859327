/** Domain errors at the HTTP edge: one table gives each its status, code, message, details and headers (docs/api.md#errors). */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type AnyDomainError, Conflict, type ConflictCode, type DomainError, type DomainErrorName, type LimitReached, type Resource } from "../domain/errors";
import { ApiError, type ErrorCode, type ErrorDetail } from "../http/errors";
import { representationEtag } from "../http/caching";

const LIMITS: Record<LimitReached["what"], { code: ErrorCode; message: (max: number) => string }> = {
  apiKeys: { code: "key_limit_reached", message: (max) => `An account holds at most ${max} active keys; revoke one (DELETE /accounts/me/keys/{keyId}) first.` },
  webhooks: {
    code: "subscription_limit_reached",
    message: (max) => `At most ${max} webhook subscriptions may exist; delete one (DELETE /webhooks/{webhookId}) first.`,
  },
  redeliveries: {
    code: "redelivery_limit_reached",
    message: (max) => `At most ${max} redeliveries (resends, tests, recoveries) may wait for one subscription; retry once some were sent.`,
  },
};

/** A resource in messages: with its id as a subject (`Pet 7`), and as a noun (`the pet`). */
const NAMES: Record<Resource, { title: string; noun: string }> = {
  pet: { title: "Pet", noun: "pet" },
  category: { title: "Category", noun: "category" },
  order: { title: "Order", noun: "order" },
  inventory: { title: "Inventory entry of pet", noun: "inventory entry" },
  account: { title: "Account", noun: "account" },
  apiKey: { title: "API key", noun: "API key" },
  webhook: { title: "Webhook", noun: "webhook" },
  event: { title: "Event", noun: "event" },
};

/** Why a pet status change is refused, by `invalid_transition`'s reason. */
const TRANSITION_REFUSALS = {
  no_stock: "inventory quantity is 0; restock first with PUT /store/inventory/{petId}",
  open_orders: "the pet has open orders; fulfil or cancel them first",
  not_allowed: "only available→pending, pending→available, available/pending→sold and sold→available are allowed",
} as const;

/** The response of one kind of domain error; `code` is fixed or depends on the error. */
interface Row<E> {
  status: ContentfulStatusCode;
  code: ErrorCode | ((error: E) => ErrorCode);
  message: (error: E) => string;
  details?: (error: E) => ErrorDetail[];
  headers?: (error: E) => Record<string, string> | undefined;
}

/** A row per domain error, and per code for conflicts (409, the conflict's own code). */
type Key = Exclude<DomainErrorName, "Conflict"> | ConflictCode;
type RowOf<K extends Key> = K extends ConflictCode ? Omit<Row<Conflict<K>>, "status" | "code"> : Row<Extract<AnyDomainError, { name: K }>>;

const RESPONSES: { [K in Key]: RowOf<K> } = {
  NotFound: { status: 404, code: "not_found", message: (e) => `${NAMES[e.resource].title} ${e.id} was not found.` },
  StaleVersion: {
    status: 412,
    code: "precondition_failed",
    message: (e) =>
      e.current ? "If-Match does not match the current ETag; fetch the resource again." : `The ${NAMES[e.resource].noun} changed meanwhile; fetch it again.`,
    // The ETag the client should have sent (RFC 9110 §13.1.1), when the check saw the current representation.
    headers: (e) => e.current && { ETag: representationEtag(e.current.representation) },
  },
  InvalidReference: {
    status: 422,
    code: (e) => (e.resource === "category" ? "category_not_found" : "pet_not_found"),
    message: (e) => `${NAMES[e.resource].title} ${e.id} does not exist.`,
    details: (e) => [{ path: `body.${e.field}`, message: `No such ${NAMES[e.resource].noun}.` }],
  },
  InvalidInput: {
    status: 400,
    code: "validation_error",
    message: () => "The request is invalid; see details.",
    details: (e) => [{ path: `body.${e.field}`, message: e.problem }],
  },
  LimitReached: {
    status: 409,
    code: (e) => LIMITS[e.what].code,
    message: (e) => LIMITS[e.what].message(e.max),
  },
  IdempotencyKeyInProgress: {
    status: 409,
    code: "concurrent_update",
    message: () => "A request with this Idempotency-Key is still in progress; retry shortly.",
  },
  IdempotencyKeyReused: {
    status: 422,
    code: "idempotency_key_reused",
    message: () => "This Idempotency-Key was used with a different request in the last 24 hours.",
  },
  duplicate_name: { message: ({ facts }) => `A category named "${facts.name}" already exists.` },
  duplicate_email: { message: () => "An account with this email already exists." },
  category_in_use: { message: ({ facts }) => `Category ${facts.categoryId} still has pets; move or delete them first.` },
  pet_has_orders: { message: ({ facts }) => `Pet ${facts.petId} has orders and cannot be deleted.` },
  pet_not_available: { message: ({ facts }) => `Pet ${facts.petId} is ${facts.status}, not available.` },
  insufficient_stock: { message: ({ facts }) => `Only ${facts.inStock} of pet ${facts.petId} in stock; ${facts.requested} requested.` },
  order_complete: {
    message: ({ facts }) =>
      facts.attempted === "change"
        ? `Order ${facts.orderId} is already fulfilled and cannot change.`
        : `Order ${facts.orderId} is fulfilled and cannot be cancelled.`,
  },
  invalid_transition: { message: ({ facts }) => `A pet cannot go from ${facts.from} to ${facts.to}: ${TRANSITION_REFUSALS[facts.reason]}.` },
  concurrent_update: { message: ({ facts }) => `${NAMES[facts.resource].title} ${facts.id} was changed by another request meanwhile; try again.` },
};

/** The Error response of a domain error, by `RESPONSES`. */
export function domainErrorResponse(error: DomainError): ApiError {
  const e = error as AnyDomainError;
  const row = (e instanceof Conflict ? { status: 409, code: e.code satisfies ErrorCode, ...RESPONSES[e.code] } : RESPONSES[e.name]) as Row<AnyDomainError>;
  const code = typeof row.code === "function" ? row.code(e) : row.code;
  return new ApiError(row.status, code, row.message(e), row.details?.(e), row.headers?.(e));
}
