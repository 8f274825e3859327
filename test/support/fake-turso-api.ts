/**
 * A local fake of Turso's Platform API (https://docs.turso.tech/api-reference)
 * for the calls `@tursodatabase/api` makes on databases: list, get, create,
 * delete, and create a database token. Point the client (and `npm run
 * preview`) at it with `TURSO_API_BASE_URL=<fake.baseUrl>`.
 *
 * Databases are names only: each one's `Hostname` is `host` (one real libSQL
 * server, e.g. sqld, shared by every fake database), so a test can migrate and
 * read the "created" database for real. Every request is recorded; unknown
 * routes answer 404 and are listed in `unknown`. Errors use Turso's shape
 * `{error: "…"}`. Only `Authorization: Bearer <apiToken>` is served.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface TursoRequest {
  method: string;
  /** Path below `/v1`, e.g. `/organizations/acme/databases/petstore-x`. */
  path: string;
  query: Record<string, string>;
  json?: Record<string, unknown>;
}

export interface FakeDatabase {
  name: string;
  id: string;
  group: string;
}

export interface FakeTursoOptions {
  org: string;
  apiToken: string;
  /** `host:port` every database's Hostname points at. */
  host: string;
  /** Databases that exist before the test (e.g. production). */
  databases?: string[];
}

export class FakeTursoApi {
  readonly requests: TursoRequest[] = [];
  readonly unknown: TursoRequest[] = [];
  readonly databases = new Map<string, FakeDatabase>();
  /** Tokens minted, with their query (expiration, authorization). */
  readonly tokens: { database: string; jwt: string; expiration?: string; authorization?: string }[] = [];
  /** When set, deleting a database answers 500 with this message. */
  failDeletes: string | undefined;
  private port = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: FakeTursoOptions,
  ) {
    for (const name of options.databases ?? []) this.databases.set(name, { name, id: randomUUID(), group: "default" });
  }

  static async start(options: FakeTursoOptions): Promise<FakeTursoApi> {
    let fake: FakeTursoApi | undefined;
    const server = createServer((req, res) => {
      fake!.handle(req).then(({ status, body }) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      });
    });
    fake = new FakeTursoApi(server, options);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake.port = (server.address() as AddressInfo).port;
    return fake;
  }

  /** Value for TURSO_API_BASE_URL (the client's `baseUrl`, ending in `/v1/` like Turso's). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1/`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const record: TursoRequest = { method: req.method ?? "GET", path: url.pathname.replace(/^\/v1/, ""), query: Object.fromEntries(url.searchParams) };
    if (text) record.json = JSON.parse(text) as Record<string, unknown>;
    this.requests.push(record);
    if (req.headers.authorization !== `Bearer ${this.options.apiToken}`) return { status: 401, body: { error: "unauthorized" } };
    const result = url.pathname.startsWith("/v1/") ? this.route(record) : undefined;
    if (result) return result;
    this.unknown.push(record);
    return { status: 404, body: { error: `fake: no route for ${record.method} ${record.path}` } };
  }

  private route(r: TursoRequest): { status: number; body: unknown } | undefined {
    const base = `/organizations/${this.options.org}/databases`;
    const view = (db: FakeDatabase) => ({
      Name: db.name,
      DbId: db.id,
      Hostname: this.options.host,
      group: db.group,
      type: "logical",
      regions: ["fra"],
      primaryRegion: "fra",
    });
    if (r.path === base && r.method === "GET") {
      const group = r.query.group;
      return { status: 200, body: { databases: [...this.databases.values()].filter((db) => !group || db.group === group).map(view) } };
    }
    if (r.path === base && r.method === "POST") {
      const name = String(r.json?.name ?? "");
      if (!/^[a-z0-9-]{1,64}$/.test(name)) return { status: 400, body: { error: "invalid database name" } };
      if (this.databases.has(name)) return { status: 409, body: { error: `database with name ${name} already exists` } };
      const db = { name, id: randomUUID(), group: typeof r.json?.group === "string" ? r.json.group : "default" };
      this.databases.set(name, db);
      return { status: 200, body: { database: { DbId: db.id, Hostname: this.options.host, Name: db.name } } };
    }
    const one = new RegExp(`^${base}/([^/]+)(/auth/tokens)?$`).exec(r.path);
    if (!one) return undefined;
    const db = this.databases.get(one[1]!);
    const missing = { status: 404, body: { error: `database ${one[1]} not found` } };
    if (one[2] && r.method === "POST") {
      if (!db) return missing;
      const jwt = `fake-jwt-${db.name}-${this.tokens.length + 1}`;
      this.tokens.push({ database: db.name, jwt, expiration: r.query.expiration, authorization: r.query.authorization });
      return { status: 200, body: { jwt } };
    }
    if (one[2]) return undefined;
    if (r.method === "GET") return db ? { status: 200, body: { database: view(db) } } : missing;
    if (r.method === "DELETE") {
      if (this.failDeletes) return { status: 500, body: { error: this.failDeletes } };
      if (!db) return missing;
      this.databases.delete(db.name);
      return { status: 200, body: { database: db.name } };
    }
    return undefined;
  }
}
