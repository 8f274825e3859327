/**
 * Floor Worker of `npm run bench`: bare Hono answering every request with a
 * constant Pet-sized JSON body (BODY_BYTES, a plain-text binding). What the
 * Worker runtime costs before any app or database work.
 */
import { Hono } from "hono";
import { constantPet } from "./pet-body";

const app = new Hono<{ Bindings: { BODY_BYTES?: string } }>();
let body: string | undefined;
app.all("*", (c) => {
  body ??= constantPet(Number(c.env.BODY_BYTES || 64));
  return c.body(body, 200, { "Content-Type": "application/json" });
});

export default app;
