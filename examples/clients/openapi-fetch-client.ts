/**
 * Example: a purchase through openapi-fetch with types that openapi-typescript
 * generated from GET /openapi.json (`npm run clients:types` writes
 * ./petstore-api.d.ts; docs/clients.md). Paths, parameters, bodies and
 * responses are checked by `tsc`; every non-2xx answer arrives as `error`, the
 * API's Error object (docs/api.md#errors), and is thrown as an OpenApiError.
 * Run by test/resources/clients.test.ts against the app over a temp libSQL file.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "./petstore-api";

/** The Error object of every non-2xx response. */
export type ApiErrorBody = components["schemas"]["Error"];

/** A non-2xx answer of the API, with its Error object. */
export class OpenApiError extends Error {
  constructor(readonly body: ApiErrorBody) {
    super(`${body.status} ${body.code}: ${body.message}`);
    this.name = "OpenApiError";
  }
}

export interface ExampleOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** A staff API key (`psk_…`): printed by the first `npm start`, or `npm run keys:create -- --role staff`. */
  staffKey: string;
  /** The fetch to use (default: the global one; the tests pass `app.request`). */
  fetch?: (request: Request) => Promise<Response>;
}

/**
 * Staff create a category, a pet and its stock; a new customer signs up and
 * orders one unit (retry-safe with an Idempotency-Key); the customer's attempt
 * to create a pet is refused. Names are fresh on every run.
 * Returns the created rows and the refusal's Error object; throws OpenApiError on any other non-2xx.
 */
export async function openapiFetchExample(options: ExampleOptions) {
  const run = crypto.randomUUID().slice(0, 8);
  const client = (key?: string) =>
    createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch, headers: key ? { Authorization: `Bearer ${key}` } : {} });
  const staff = client(options.staffKey);

  const created = await staff.POST("/categories", { body: { name: `Cats ${run}`, description: "Domestic cats" } });
  if (created.error) throw new OpenApiError(created.error);
  const category = created.data;

  const newPet = await staff.POST("/pets", { body: { name: `Tom ${run}`, categoryId: category.id } });
  if (newPet.error) throw new OpenApiError(newPet.error);
  const pet = newPet.data;

  const stock = await staff.PUT("/store/inventory/{petId}", { params: { path: { petId: pet.id } }, body: { quantity: 3 } });
  if (stock.error) throw new OpenApiError(stock.error);

  const signUp = await client().POST("/accounts", { body: { name: `Grace ${run}`, email: `grace-${run}@example.com` } });
  if (signUp.error) throw new OpenApiError(signUp.error);
  const { account, apiKey } = signUp.data; // apiKey.key is shown in this response only

  const customer = client(apiKey.key);
  const placed = await customer.POST("/store/orders", {
    params: { header: { "idempotency-key": `order-${run}` } },
    body: { petId: pet.id, quantity: 1 },
  });
  if (placed.error) throw new OpenApiError(placed.error);
  const order = placed.data;

  // A customer may not create pets: the answer is 403 with the Error object.
  const refusedRes = await customer.POST("/pets", { body: { name: `Felix ${run}`, categoryId: category.id } });
  if (!refusedRes.error) throw new Error("a customer created a pet");
  const refused = refusedRes.error;

  return { category, pet, account, order, refused };
}
