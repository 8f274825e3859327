/**
 * Floor Worker of `npm run bench`: bare Hono making ONE `@libsql/client/web`
 * query per request (the pet row by id, over DATABASE_URL), with a new client
 * per request as src/worker.ts builds it. The floor of the Worker's
 * `GET /pets/{petId}`: one HTTP round trip to sqld, no app.
 */
import { createClient } from "@libsql/client/web";
import { Hono } from "hono";
import { type FloorBindings, spendRateLimits } from "./rate-limit";

const app = new Hono<{ Bindings: FloorBindings }>();
app.get("/pets/:petId", async (c) => {
  await spendRateLimits(c.env);
  const client = createClient({ url: c.env.DATABASE_URL });
  const { rows } = await client.execute({ sql: "SELECT id, name, category_id, status FROM pets WHERE id = ?", args: [Number(c.req.param("petId"))] });
  return rows.length === 0 ? c.json({ code: "not_found" }, 404) : c.json(rows[0]);
});

export default app;
