/**
 * The benchmark's baseline: a bare Hono app on @hono/node-server answering a
 * constant JSON body of BODY_BYTES bytes (the size of a Pet) on every GET and
 * POST. Listens on 127.0.0.1:PORT.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { constantPet } from "./floors/pet-body";

const body = constantPet(Number(process.env.BODY_BYTES || 64));
const app = new Hono();
app.all("*", (c) => c.body(body, 200, { "Content-Type": "application/json" }));
serve({ fetch: app.fetch, hostname: "127.0.0.1", port: Number(process.env.PORT) }, (info) => console.log(`baseline listening on ${info.port}`));
