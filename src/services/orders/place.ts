/** Placing an order (docs/api.md#stock-and-ordering): one atomic batch takes the stock, inserts the order, appends the events, reads back the outcome. */
import { and, eq, gte, type SQL, sql } from "drizzle-orm";
import { unionAll } from "drizzle-orm/sqlite-core";
import { type Database, qb } from "../../db/client";
import { eventColumns, insertEventRows, inventoryUpdatedWhen, petUpdatedIfChanged } from "../../db/events";
import { guarded, outbox, params, plan, run, statement } from "../../db/plan";
import { idempotencyKeys, inventory, ORDER, type Order, orders, pets } from "../../db/schema";
import type { Creatable } from "../../db/representation";
import { aliasedColumns } from "../../db/select-list";
import { Conflict, InvalidReference } from "../../domain/errors";
import type { PetStatus } from "../../domain/pets";
import type { Principal } from "../../domain/principal";
import { claimStep, claimValues, existingResponse, keyColumns, newClaimToken, type OwnClaim, ownClaim, releaseStep } from "../idempotency.service";
import { requestFingerprint } from "../idempotency.service";

/** A response to send: the body as stored (so replays are byte-identical) and its headers. */
export interface PlacedOrder {
  body: Order;
  location: string;
  replayed: boolean;
}

/** The values of a placement: `token` is the placement token, `key` the Idempotency-Key (NULL without one). */
type PlacementValues = { petId: number; accountId: number; quantity: number; shipDate: string | null; token: string; occurredAt: string; key: string | null };
const p = params<PlacementValues>();
/** A keyed placement's own statements also name the claim (`OwnClaim`; its claim token is the placement token). */
const keyed = params<PlacementValues & OwnClaim>();
/** "The order placed by this batch": the order row tagged with `token`. */
const placedHere = sql`exists (select 1 from ${orders} where ${orders.placementToken} = ${p("token")})`;

/** Takes the stock of the order while the pet is available; with `claimed`, only when the step before (the claim) changed a row. */
function takeStock(claimed?: SQL) {
  return p.prepare(
    qb
      .update(inventory)
      .set({ quantity: sql`${inventory.quantity} - ${p("quantity")}`, version: sql`${inventory.version} + 1` })
      .where(
        and(
          eq(inventory.petId, p("petId")),
          gte(inventory.quantity, p("quantity")),
          sql`(select ${pets.status} from ${pets} where ${pets.id} = ${p("petId")}) = 'available'`,
          claimed,
        ),
      ),
  );
}

/** Inserts the order, tagged with `token`, only when taking the stock changed a row. */
const insertOrder = p.guarded((changed) =>
  qb.insert(orders).select(
    qb
      .select(
        aliasedColumns({
          id: sql<number>`NULL`,
          petId: inventory.petId,
          accountId: sql<number>`${p("accountId")}`,
          quantity: sql<number>`${p("quantity")}`,
          shipDate: sql<string | null>`${p("shipDate")}`,
          complete: sql<boolean>`0`,
          createdAt: sql<string>`${p("occurredAt")}`,
          version: sql<number>`1`,
          placementToken: sql<string>`${p("token")}`,
        }),
      )
      .from(inventory)
      .where(and(eq(inventory.petId, p("petId")), changed)),
  ),
);

/** The pet becomes pending when this batch's order took its last unit. */
const petPending = p.statement(
  qb
    .update(pets)
    .set({ status: "pending", version: sql`${pets.version} + 1` })
    .where(
      and(
        eq(pets.id, p("petId")),
        sql`${pets.status} = 'available'`,
        sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${p("petId")}) = 0`,
        placedHere,
      ),
    ),
);

/** The events in this order: `pet.updated` (when the step before made the pet pending), `order.placed`, `inventory.updated` (UNION ALL). */
const placementEvents = outbox(
  p.guarded((changed) =>
    insertEventRows(
      unionAll(
        petUpdatedIfChanged(p, p("petId"), changed),
        qb
          .select(eventColumns(p, "order.placed", ORDER.json()))
          .from(orders)
          .where(eq(orders.placementToken, p("token"))),
        inventoryUpdatedWhen(p, p("petId"), placedHere),
      ),
    ),
  ),
);

/** Stores the placed order as the response of the Idempotency-Key (`accountId`, `key`), on this batch's own claim only. */
const recordOrder = keyed.statement(
  qb
    .update(idempotencyKeys)
    .set({
      responseStatus: 201,
      responseBody: sql`(select ${ORDER.json()} from ${orders} where ${orders.placementToken} = ${keyed("token")})`,
      responseHeaders: sql`(select json_object('Location', '/store/orders/' || ${orders.id}) from ${orders} where ${orders.placementToken} = ${keyed("token")})`,
    })
    .where(and(ownClaim(keyed), placedHere)),
);

/** One row: the order placed by this batch (if any), the pet's state, and the Idempotency-Key's row (if any). */
const readBack = p.statement(
  qb
    .select({
      order: ORDER.columns,
      petStatus: sql<PetStatus | null>`(select ${pets.status} from ${pets} where ${pets.id} = ${p("petId")})`,
      quantity: sql<number | null>`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${p("petId")})`,
      key: keyColumns,
    })
    .from(sql`(select 1)`)
    .leftJoin(orders, eq(orders.placementToken, p("token")))
    .leftJoin(idempotencyKeys, and(eq(idempotencyKeys.accountId, p("accountId")), eq(idempotencyKeys.key, p("key")))),
);

const placement = plan({ take: statement(takeStock()), order: insertOrder, pending: petPending, events: placementEvents, readBack });

/** Placing with an Idempotency-Key: the claim guards the take; a refused order releases its own claim (by its token), never another request's. */
const keyedPlacement = plan({
  claim: claimStep,
  take: guarded(takeStock),
  order: insertOrder,
  pending: petPending,
  events: placementEvents,
  record: recordOrder,
  release: releaseStep,
  readBack,
});

/** An order to place: who places it, what (`quantity` units of pet `petId`), with which Idempotency-Key (if any), at what time. */
export interface Placement {
  principal: Principal;
  input: Omit<Creatable<typeof ORDER>, "complete">;
  idempotencyKey?: string;
  now: Date;
}

/** Place an order for the caller, honouring the Idempotency-Key. @throws InvalidReference, Conflict, IdempotencyKeyInProgress, IdempotencyKeyReused. */
export async function placeOrder(db: Database, { principal, input, idempotencyKey, now }: Placement): Promise<PlacedOrder> {
  const { petId, quantity } = input;
  const values = {
    petId,
    accountId: principal.accountId,
    quantity,
    shipDate: input.shipDate ?? null,
    token: newClaimToken(),
    occurredAt: now.toISOString(),
    key: idempotencyKey ?? null,
  };
  // Only an Idempotency-Key needs the fingerprint (of the validated body: shipDate in UTC).
  const fingerprint = idempotencyKey === undefined ? "" : await requestFingerprint("POST", "/store/orders", input);
  const { readBack } =
    idempotencyKey === undefined
      ? await run(db, placement, values)
      : await run(db, keyedPlacement, {
          ...values,
          ...claimValues({ accountId: principal.accountId, key: idempotencyKey, method: "POST", path: "/store/orders", fingerprint, token: values.token, now }),
        });
  const row = readBack[0]!;
  if (row.order !== null) return { body: ORDER.present(row.order), location: `/store/orders/${row.order.id}`, replayed: false };
  // The key is another request's (this batch's own claim, had it failed to place the order, was released).
  if (row.key !== null) {
    const stored = existingResponse(row.key, fingerprint);
    return { body: JSON.parse(stored.body) as Order, location: stored.headers.Location!, replayed: true };
  }
  if (row.petStatus === null) throw new InvalidReference("pet", petId, "petId");
  if (row.petStatus !== "available") throw new Conflict("pet_not_available", { petId, status: row.petStatus });
  throw new Conflict("insufficient_stock", { petId, inStock: row.quantity ?? 0, requested: quantity });
}
