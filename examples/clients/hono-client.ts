/**
 * Example: a purchase through Hono's typed client, `hc<AppType>` (docs/clients.md).
 * Paths, inputs and response bodies come from the app's route tree, so `tsc`
 * rejects a wrong path, field or status. Every non-2xx answer is thrown as a
 * PetstoreApiError carrying the API's Error object (docs/api.md#errors).
 * Run by test/resources/clients.test.ts against the app over a temp libSQL file.
 */
import { hc } from "hono/client";
import type { AppType } from "../../src/app";

/** The Error object of every non-2xx response (`components.schemas.Error`). */
export interface ApiErrorBody {
  code: string;
  message: string;
  status: number;
  details?: { path: string; message: string }[] | undefined;
  requestId?: string | undefined;
}

/** A non-2xx answer of the API, with its Error object. */
export class PetstoreApiError extends Error {
  constructor(readonly body: ApiErrorBody) {
    super(`${body.status} ${body.code}: ${body.message}`);
    this.name = "PetstoreApiError";
  }
}

export interface ExampleOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** A staff API key (`psk_…`): printed by the first `npm start`, or `npm run keys:create -- --role staff`. */
  staffKey: string;
  /** The fetch to use (default: the global one; the tests pass `app.request`). */
  fetch?: typeof fetch;
}

/**
 * Staff create a category, a pet and its stock; a new customer signs up and
 * orders one unit (retry-safe with an Idempotency-Key); the customer's attempt
 * to create a pet is refused. Names are fresh on every run.
 * Returns the created rows and the refusal's Error object; throws PetstoreApiError on any other non-2xx.
 */
export async function honoClientExample(options: ExampleOptions) {
  const run = crypto.randomUUID().slice(0, 8);
  const staff = hc<AppType>(options.baseUrl, { fetch: options.fetch, headers: { Authorization: `Bearer ${options.staffKey}` } });

  const categoryRes = await staff.categories.$post({ header: {}, json: { name: `Dogs ${run}`, description: "Domestic dogs" } });
  if (!categoryRes.ok) throw new PetstoreApiError(await categoryRes.json());
  const category = await categoryRes.json();

  const petRes = await staff.pets.$post({ header: {}, json: { name: `Bella ${run}`, categoryId: category.id } });
  if (!petRes.ok) throw new PetstoreApiError(await petRes.json());
  const pet = await petRes.json();

  const stockRes = await staff.store.inventory[":petId"].$put({ header: {}, param: { petId: String(pet.id) }, json: { quantity: 3 } });
  if (!stockRes.ok) throw new PetstoreApiError(await stockRes.json());

  const anonymous = hc<AppType>(options.baseUrl, { fetch: options.fetch });
  const signUpRes = await anonymous.accounts.$post({ json: { name: `Ada ${run}`, email: `ada-${run}@example.com` } });
  if (!signUpRes.ok) throw new PetstoreApiError(await signUpRes.json());
  const { account, apiKey } = await signUpRes.json(); // apiKey.key is shown in this response only

  const customer = hc<AppType>(options.baseUrl, { fetch: options.fetch, headers: { Authorization: `Bearer ${apiKey.key}` } });
  const orderRes = await customer.store.orders.$post({
    header: { "idempotency-key": `order-${run}` },
    json: { petId: pet.id, quantity: 1 },
  });
  if (!orderRes.ok) throw new PetstoreApiError(await orderRes.json());
  const order = await orderRes.json();

  // A customer may not create pets: the answer is 403 with the Error object.
  const refusedRes = await customer.pets.$post({ header: {}, json: { name: `Rex ${run}`, categoryId: category.id } });
  if (refusedRes.ok) throw new Error("a customer created a pet");
  const refused = await refusedRes.json();

  return { category, pet, account, order, refused };
}
