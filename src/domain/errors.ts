/** Domain errors: what a service throws when a rule refuses a request, without HTTP (docs/architecture.md#errors-domain-errors-one-table-at-the-edge). */
import type { PetStatus } from "./pets";

/** The resources a domain error names. `inventory` is a pet's inventory entry (its id is the pet's). */
export type Resource = "pet" | "category" | "order" | "inventory" | "account" | "apiKey" | "webhook" | "event";

/** Base of every domain error; `name` tells which one (the edge table's key). */
export abstract class DomainError extends Error {
  abstract override readonly name: DomainErrorName;
}

/** `resource` `id` does not exist, or the caller may not see it (another customer's order). → 404 `not_found`. */
export class NotFound extends DomainError {
  override readonly name = "NotFound";
  constructor(
    readonly resource: Resource,
    readonly id: number,
  ) {
    super(`${resource} ${id} not found`);
  }
}

/** The first of `rows`, a read of `resource` `id`. @throws NotFound when there is none. */
export function found<R>([row]: readonly R[], resource: Resource, id: number): R {
  if (!row) throw new NotFound(resource, id);
  return row;
}

/** The facts each conflict carries, by its stable code (docs/api.md#errors). */
export interface ConflictFacts {
  /** Another category has this name (case-insensitively). */
  duplicate_name: { name: string };
  /** Another account has this email address. */
  duplicate_email: Record<string, never>;
  /** Pets still use the category to delete. */
  category_in_use: { categoryId: number };
  /** Orders reference the pet to delete. */
  pet_has_orders: { petId: number };
  /** The pet to order is not `available`. */
  pet_not_available: { petId: number; status: PetStatus };
  /** Fewer units in stock than ordered. */
  insufficient_stock: { petId: number; inStock: number; requested: number };
  /** The order is fulfilled: it can neither change nor be cancelled. */
  order_complete: { orderId: number; attempted: "change" | "cancel" };
  /** docs/api.md#stock-and-ordering forbids the status change, for `reason`. */
  invalid_transition: { from: PetStatus; to: PetStatus; reason: "no_stock" | "open_orders" | "not_allowed" };
  /** The resource kept changing between read and conditional write; retries ran out. */
  concurrent_update: { resource: Resource; id: number };
}

export type ConflictCode = keyof ConflictFacts;

/** A rule refuses the change in the resource's current state: `code` (stable) says which, `facts` what it depends on. → 409 `code`. */
export class Conflict<C extends ConflictCode = ConflictCode> extends DomainError {
  override readonly name = "Conflict";
  constructor(
    readonly code: C,
    readonly facts: ConflictFacts[C],
  ) {
    super(`conflict: ${code}`);
  }
}

/** Not as the caller expected (If-Match); `current`: the representation the check saw, if any (the 412's ETag). → 412 `precondition_failed`. */
export class StaleVersion extends DomainError {
  override readonly name = "StaleVersion";
  constructor(
    readonly resource: Resource,
    readonly id: number,
    readonly current?: { representation: unknown },
  ) {
    super(`${resource} ${id} is not at the expected version`);
  }
}

/** The input's `field` refers to `resource` `id`, which does not exist. → 422 `category_not_found` | `pet_not_found`, `field` in the details. */
export class InvalidReference extends DomainError {
  override readonly name = "InvalidReference";
  constructor(
    readonly resource: "category" | "pet",
    readonly id: number,
    readonly field: string,
  ) {
    super(`${field}: ${resource} ${id} does not exist`);
  }
}

/** The input's `field` breaks a rule the schema cannot express; `problem` says which, for the caller. → 400 `validation_error`. */
export class InvalidInput extends DomainError {
  override readonly name = "InvalidInput";
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** At most `max` of `what` may exist (docs/api.md#limits), and that many do. → 409 `key_limit_reached` | `subscription_limit_reached` | `redelivery_limit_reached`. */
export class LimitReached extends DomainError {
  override readonly name = "LimitReached";
  constructor(
    readonly what: "apiKeys" | "webhooks" | "redeliveries",
    readonly max: number,
  ) {
    super(`at most ${max} ${what}`);
  }
}

/** The Idempotency-Key's first request is still running (docs/api.md#idempotency-key). → 409 `concurrent_update`. */
export class IdempotencyKeyInProgress extends DomainError {
  override readonly name = "IdempotencyKeyInProgress";
  constructor() {
    super("idempotency key in progress");
  }
}

/** The Idempotency-Key was used with another request within its 24 h. → 422 `idempotency_key_reused`. */
export class IdempotencyKeyReused extends DomainError {
  override readonly name = "IdempotencyKeyReused";
  constructor() {
    super("idempotency key reused");
  }
}

/** Every domain error, for tables over them. */
export type AnyDomainError =
  | NotFound
  | Conflict
  | StaleVersion
  | InvalidReference
  | InvalidInput
  | LimitReached
  | IdempotencyKeyInProgress
  | IdempotencyKeyReused;

export type DomainErrorName = AnyDomainError["name"];
