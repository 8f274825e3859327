/**
 * The /docs page in a real browser (Debian's Chromium driven by playwright-core):
 * the app is served over HTTP on 127.0.0.1 (where Scalar turns its hosted-service
 * features on by default), every request to another host is refused and
 * recorded, and the page must render the API's title and operations with search
 * and models, and none of Scalar's hosted-service buttons (docs/api.md#endpoints).
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

/** Debian's package (`apt-get install chromium`; .ci/run installs it), or `CHROMIUM_PATH`. */
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Texts of Scalar's hosted-service controls (its English locale), none of which may appear. */
const HOSTED_SERVICE_TEXTS = ["Ask AI", "Generate MCP", "Connect MCP", "Developer Tools", "Configure", "Deploy", "Share", "Open API Client"];

type Document = {
  info: { title: string };
  paths: Record<string, Record<string, { summary?: string }>>;
  components: { schemas: Record<string, unknown> };
};

let target: NodeTarget;
let server: ReturnType<typeof createAdaptorServer>;
let origin: string;
let profile: string;
let context: BrowserContext;
let page: Page;
let document: Document;
const outside: string[] = [];

beforeAll(async () => {
  target = await nodeTarget();
  server = createAdaptorServer({ fetch: target.app.fetch });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  document = await (await fetch(`${origin}/openapi.json`)).json();

  profile = mkdtempSync(join(tmpdir(), "petstore-chromium-"));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    outside.push(url);
    return route.abort("internetdisconnected");
  });
  page = await context.newPage();
  await page.goto(`${origin}/docs`);
  await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
  // Open every group of the sidebar: it then lists every operation and model.
  for (let i = 0; i < 50; i++) {
    const closed = page.getByRole("button", { name: /^Open Group/ });
    if ((await closed.count()) === 0) break;
    await closed.first().click();
  }
}, 60_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await new Promise((resolve) => server?.close(resolve));
  await target?.close();
});

/** The sidebar's text (every group opened in beforeAll). */
async function sidebarText(): Promise<string> {
  return (await page.locator("aside").first().textContent()) ?? "";
}

describe("GET /docs in Chromium", () => {
  it("renders the API's title and lists every operation of /openapi.json", async () => {
    expect(await page.title()).toBe("Petstore API reference");
    await expect(page.getByRole("heading", { name: document.info.title }).first().isVisible()).resolves.toBe(true);
    const sidebar = await sidebarText();
    const summaries = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.summary!));
    expect(summaries.length).toBeGreaterThan(30);
    for (const summary of summaries) expect(sidebar, summary).toContain(summary);
  });

  it("keeps models, request and response examples, and search", async () => {
    const sidebar = await sidebarText();
    expect(sidebar).toContain("Models");
    for (const name of Object.keys(document.components.schemas)) expect(sidebar, name).toContain(name);
    await expect(page.getByText("Request Example for").first().isVisible()).resolves.toBe(true);
    await expect(page.getByText("Show Schema").first().isVisible()).resolves.toBe(true);

    const orders = document.paths["/store/orders"]!.post!.summary!;
    await page
      .getByRole("button", { name: /search/i })
      .first()
      .click();
    await page.keyboard.type(orders);
    await expect(
      page
        .getByRole("option", { name: new RegExp(orders) })
        .first()
        .isVisible(),
    ).resolves.toBe(true);
    await page.keyboard.press("Escape");
  });

  it("shows none of Scalar's hosted-service controls", async () => {
    for (const label of HOSTED_SERVICE_TEXTS) {
      expect(await page.getByText(label, { exact: true }).count(), label).toBe(0);
      expect(await page.getByRole("button", { name: label }).count(), label).toBe(0);
      expect(await page.getByRole("link", { name: label }).count(), label).toBe(0);
    }
  });

  it("loads nothing from outside the service (works offline)", () => {
    expect(outside).toEqual([]);
  });
});
