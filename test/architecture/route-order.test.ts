/**
 * No static path is shadowed by a parameter route registered before it (docs/architecture.md#adding-an-endpoint): Hono tries the
 * routes of a method in registration order, so `GET /store/inventory/low` registered after `GET /store/inventory/:petId` is answered
 * by the `:petId` route (a 400 for the id "low"). Checked over the app's registered routes, in their order.
 */
import { Hono } from "hono";
import { afterAll, expect, it } from "vitest";
import { nodeTarget } from "../support/node-target";

type Route = { method: string; path: string };

/** Whether `earlier` (a pattern with `:params` and `*`) answers every request for `later`'s path, where `later` has a static segment instead. */
function shadows(earlier: string, later: string): boolean {
  const a = earlier.split("/");
  const b = later.split("/");
  if (a.at(-1) !== "*" && a.length !== b.length) return false;
  let staticUnderParam = false;
  for (const [i, segment] of a.entries()) {
    if (segment === "*") return true;
    const other = b[i];
    if (other === undefined) return false;
    if (segment.startsWith(":")) staticUnderParam ||= !other.startsWith(":");
    else if (segment !== other) return false;
  }
  return staticUnderParam;
}

/** "METHOD later after METHOD earlier" for each route a route registered before it shadows (middleware, `ALL`, is not a route). */
function shadowed(routes: readonly Route[]): string[] {
  const handlers = routes.filter((r) => r.method !== "ALL");
  return handlers.flatMap((later, i) =>
    handlers
      .slice(0, i)
      .filter((earlier) => earlier.method === later.method && shadows(earlier.path, later.path))
      .map((earlier) => `${later.method} ${later.path} is shadowed by ${earlier.method} ${earlier.path}, registered before it`),
  );
}

const target = await nodeTarget();
afterAll(() => target.close());

it("no route of the app is shadowed by a parameter route registered before it", () => {
  expect(target.app.routes.filter((r) => r.method !== "ALL").length).toBeGreaterThan(20);
  expect(shadowed(target.app.routes)).toEqual([]);
});

it("the check finds a static path registered after a parameter route, and what it means: the parameter route answers", async () => {
  const probe = new Hono();
  probe.get("/store/inventory/:petId", (c) => c.text(`item ${c.req.param("petId")}`));
  probe.get("/store/inventory/low", (c) => c.text("low stock"));
  probe.get("/pets/:petId", (c) => c.text("pet"));
  probe.put("/pets/mine", (c) => c.text("another method"));
  expect(await (await probe.request("/store/inventory/low")).text()).toBe("item low");
  expect(shadowed(probe.routes)).toEqual(["GET /store/inventory/low is shadowed by GET /store/inventory/:petId, registered before it"]);
});
