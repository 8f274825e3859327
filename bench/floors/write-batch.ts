/**
 * Floor Worker of `npm run bench`: bare Hono sending ONE `@libsql/client/web`
 * write batch per request (take one unit of the pet's stock, read it back),
 * with a new client per request as src/worker.ts builds it. The floor of the
 * Worker's `POST /store/orders`: one write round trip to sqld, no app.
 */
import { createClient } from "@libsql/client/web";
import { Hono } from "hono";
import { type FloorBindings, spendRateLimits } from "./rate-limit";

const app = new Hono<{ Bindings: FloorBindings }>();
app.post("/store/orders", async (c) => {
  await spendRateLimits(c.env);
  const { petId } = await c.req.json<{ petId: number }>();
  const client = createClient({ url: c.env.DATABASE_URL });
  const results = await client.batch(
    [
      { sql: "UPDATE inventory SET quantity = quantity - 1 WHERE pet_id = ?", args: [petId] },
      { sql: "SELECT quantity FROM inventory WHERE pet_id = ?", args: [petId] },
    ],
    "write",
  );
  return c.json({ petId, quantity: results.at(-1)?.rows[0]?.quantity ?? null }, 201);
});

export default app;
