/**
 * Domain errors at the HTTP edge (src/middleware/domain-errors.ts): each one
 * answers the status, code, message, details and headers of docs/api.md#errors,
 * word for word what services answered when they threw ApiErrors; and the
 * precondition a handler builds from If-Match keeps RFC 9110 §13.1.1.
 */
import { describe, expect, it } from "vitest";
import {
  Conflict,
  type DomainError,
  IdempotencyKeyInProgress,
  IdempotencyKeyReused,
  InvalidInput,
  InvalidReference,
  LimitReached,
  NotFound,
  StaleVersion,
} from "../../src/domain/errors";
import { requireMatch } from "../../src/domain/precondition";
import { ifMatchPrecondition, representationEtag } from "../../src/http/caching";
import { toApiError } from "../../src/middleware/errors";

/** The response parts of `error`: status, body (without request id) and extra headers. */
function answer(error: DomainError) {
  const apiError = toApiError(error);
  return { status: apiError.status, body: apiError.toBody(), headers: apiError.headers };
}

const pet = { id: 7, name: "Rex", categoryId: 2, status: "available" };

describe("domain errors at the edge", () => {
  it("NotFound: 404 not_found naming the resource", () => {
    expect(answer(new NotFound("pet", 7))).toEqual({
      status: 404,
      body: { code: "not_found", message: "Pet 7 was not found.", status: 404 },
      headers: undefined,
    });
    const messages = (["category", "order", "inventory", "account", "apiKey", "webhook"] as const).map((r) => answer(new NotFound(r, 3)).body.message);
    expect(messages).toEqual([
      "Category 3 was not found.",
      "Order 3 was not found.",
      "Inventory entry of pet 3 was not found.",
      "Account 3 was not found.",
      "API key 3 was not found.",
      "Webhook 3 was not found.",
    ]);
  });

  it("Conflict: 409 with its own code and message", () => {
    const cases: [Conflict, string][] = [
      [new Conflict("duplicate_name", { name: "Dogs" }), 'A category named "Dogs" already exists.'],
      [new Conflict("duplicate_email", {}), "An account with this email already exists."],
      [new Conflict("category_in_use", { categoryId: 4 }), "Category 4 still has pets; move or delete them first."],
      [new Conflict("pet_has_orders", { petId: 7 }), "Pet 7 has orders and cannot be deleted."],
      [new Conflict("pet_not_available", { petId: 7, status: "pending" }), "Pet 7 is pending, not available."],
      [new Conflict("insufficient_stock", { petId: 7, inStock: 2, requested: 5 }), "Only 2 of pet 7 in stock; 5 requested."],
      [new Conflict("order_complete", { orderId: 9, attempted: "change" }), "Order 9 is already fulfilled and cannot change."],
      [new Conflict("order_complete", { orderId: 9, attempted: "cancel" }), "Order 9 is fulfilled and cannot be cancelled."],
      [
        new Conflict("invalid_transition", { from: "sold", to: "available", reason: "no_stock" }),
        "A pet cannot go from sold to available: inventory quantity is 0; restock first with PUT /store/inventory/{petId}.",
      ],
      [
        new Conflict("invalid_transition", { from: "available", to: "sold", reason: "open_orders" }),
        "A pet cannot go from available to sold: the pet has open orders; fulfil or cancel them first.",
      ],
      [
        new Conflict("invalid_transition", { from: "sold", to: "pending", reason: "not_allowed" }),
        "A pet cannot go from sold to pending: only available→pending, pending→available, available/pending→sold and sold→available are allowed.",
      ],
      [new Conflict("concurrent_update", { resource: "category", id: 4 }), "Category 4 was changed by another request meanwhile; try again."],
    ];
    for (const [error, message] of cases) {
      expect(answer(error)).toEqual({ status: 409, body: { code: error.code, message, status: 409 }, headers: undefined });
    }
  });

  it("StaleVersion: 412 precondition_failed, with the current ETag when the check saw it", () => {
    expect(answer(new StaleVersion("pet", 7, { representation: pet }))).toEqual({
      status: 412,
      body: { code: "precondition_failed", message: "If-Match does not match the current ETag; fetch the resource again.", status: 412 },
      headers: { ETag: representationEtag(pet) },
    });
    const raced = (["pet", "category", "order", "inventory"] as const).map((r) => answer(new StaleVersion(r, 7)));
    expect(raced.map((a) => [a.status, a.body.code, a.body.message, a.headers])).toEqual([
      [412, "precondition_failed", "The pet changed meanwhile; fetch it again.", undefined],
      [412, "precondition_failed", "The category changed meanwhile; fetch it again.", undefined],
      [412, "precondition_failed", "The order changed meanwhile; fetch it again.", undefined],
      [412, "precondition_failed", "The inventory entry changed meanwhile; fetch it again.", undefined],
    ]);
  });

  it("InvalidReference and InvalidInput: 422 and 400 with the field in the details", () => {
    expect(answer(new InvalidReference("category", 99, "categoryId")).body).toEqual({
      code: "category_not_found",
      message: "Category 99 does not exist.",
      status: 422,
      details: [{ path: "body.categoryId", message: "No such category." }],
    });
    expect(answer(new InvalidReference("pet", 98, "petId")).body).toEqual({
      code: "pet_not_found",
      message: "Pet 98 does not exist.",
      status: 422,
      details: [{ path: "body.petId", message: "No such pet." }],
    });
    expect(answer(new InvalidInput("url", "Port 0 is not allowed.")).body).toEqual({
      code: "validation_error",
      message: "The request is invalid; see details.",
      status: 400,
      details: [{ path: "body.url", message: "Port 0 is not allowed." }],
    });
  });

  it("limits and Idempotency-Key refusals", () => {
    expect(answer(new LimitReached("apiKeys", 100)).body).toEqual({
      code: "key_limit_reached",
      message: "An account holds at most 100 active keys; revoke one (DELETE /accounts/me/keys/{keyId}) first.",
      status: 409,
    });
    expect(answer(new LimitReached("webhooks", 50)).body).toEqual({
      code: "subscription_limit_reached",
      message: "At most 50 webhook subscriptions may exist; delete one (DELETE /webhooks/{webhookId}) first.",
      status: 409,
    });
    expect(answer(new IdempotencyKeyInProgress()).body).toEqual({
      code: "concurrent_update",
      message: "A request with this Idempotency-Key is still in progress; retry shortly.",
      status: 409,
    });
    expect(answer(new IdempotencyKeyReused()).body).toEqual({
      code: "idempotency_key_reused",
      message: "This Idempotency-Key was used with a different request in the last 24 hours.",
      status: 422,
    });
  });
});

describe("If-Match as a precondition (RFC 9110 §13.1.1)", () => {
  const etag = representationEtag(pet);

  it("no header: nothing to check", () => {
    expect(ifMatchPrecondition(undefined)).toBeUndefined();
    expect(() => requireMatch(undefined, "pet", 7, pet)).not.toThrow();
  });

  it("`*` matches any current representation", () => {
    expect(ifMatchPrecondition(" * ")!.matches(pet)).toBe(true);
  });

  it("a list matches when one strong tag is the ETag of the current or an also-current representation", () => {
    expect(ifMatchPrecondition(`"0000", ${etag}`)!.matches(pet)).toBe(true);
    expect(ifMatchPrecondition(`"0000"`)!.matches(pet)).toBe(false);
    expect(ifMatchPrecondition(representationEtag([pet]))!.matches(pet, [[pet]])).toBe(true);
    expect(ifMatchPrecondition(representationEtag([pet]))!.matches(pet)).toBe(false);
    expect(ifMatchPrecondition("")!.matches(pet)).toBe(false);
  });

  it("weak tags never match", () => {
    expect(ifMatchPrecondition(`W/${etag}`)!.matches(pet)).toBe(false);
  });

  it("requireMatch throws StaleVersion carrying the current representation", () => {
    const thrown = (() => {
      try {
        requireMatch(ifMatchPrecondition(`"0000"`), "pet", 7, pet, [[pet]]);
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(StaleVersion);
    expect(thrown).toMatchObject({ resource: "pet", id: 7, current: { representation: pet } });
  });
});
