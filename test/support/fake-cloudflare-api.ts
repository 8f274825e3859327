/**
 * A local fake of the Cloudflare API v4 (https://developers.cloudflare.com/api/)
 * for the endpoints `wrangler deploy` and `wrangler delete` call, plus the
 * Workers list that `npm run preview -- --prune` reads and the Workers
 * Observability telemetry query that `npm run alerts:workers:page` and the
 * panels of docs/monitoring/workers-dashboard.json read. Point
 * wrangler (or the script) at it with `CLOUDFLARE_API_BASE_URL=<fake.baseUrl>`.
 *
 * It keeps state (Workers with their bindings and schedules, one account with
 * a workers.dev subdomain), answers in the API's envelope
 * (`{success, errors, messages, result}`, errors with Cloudflare's codes:
 * 10007 / 10090 "worker not found"), and records every request — method, path,
 * query, and for multipart uploads the parsed `metadata` part — so tests can
 * assert what the real CLI sent. Requests it does not know answer 404 and are
 * listed in `unknown`, so a new wrangler call fails the test instead of
 * passing unseen. Only a request with `Authorization: Bearer <token>` is served.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { envelope, type FakeTelemetryEvent, telemetryQuery } from "./fake-telemetry-query";

export type { FakeTelemetryEvent } from "./fake-telemetry-query";

/** A Worker binding as the upload metadata carries it (`plain_text` var, `secret_text` secret, ...). */
export interface UploadedBinding {
  name: string;
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  /** Path below the API base, e.g. `/accounts/acc/workers/scripts/petstore-x`. */
  path: string;
  query: Record<string, string>;
  /** Parsed `metadata` part of a multipart script upload. */
  metadata?: { bindings?: UploadedBinding[]; main_module?: string; [key: string]: unknown };
  /** JSON body, when the request had one. */
  json?: unknown;
}

export interface FakeWorker {
  name: string;
  bindings: UploadedBinding[];
  crons: string[];
  workersDev: boolean;
  versions: number;
}

export interface FakeCloudflareOptions {
  accountId: string;
  apiToken: string;
  /** The account's workers.dev subdomain (`<worker>.<subdomain>.workers.dev`). */
  subdomain: string;
  /** Workers that exist before the test (e.g. the production one). */
  workers?: string[];
}

const API_PREFIX = "/client/v4";

export class FakeCloudflareApi {
  readonly requests: RecordedRequest[] = [];
  /** Requests this fake does not implement (should stay empty). */
  readonly unknown: RecordedRequest[] = [];
  readonly workers = new Map<string, FakeWorker>();
  /** When set, deleting a Worker answers 500 with this message. */
  failDeletes: string | undefined;
  /** The account's Workers Logs events, for the telemetry query. */
  telemetryEvents: FakeTelemetryEvent[] = [];
  /** Events per answer at most, whatever the request's `limit`: a client must follow the cursor. */
  telemetryPageSize = 10;
  /** When set, the telemetry query answers this status with this error. */
  failTelemetry: { status: number; code: number; message: string } | undefined;
  private port = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: FakeCloudflareOptions,
  ) {
    for (const name of options.workers ?? []) this.workers.set(name, { name, bindings: [], crons: [], workersDev: false, versions: 1 });
  }

  /** Start on 127.0.0.1:<free port>. */
  static async start(options: FakeCloudflareOptions): Promise<FakeCloudflareApi> {
    let fake: FakeCloudflareApi | undefined;
    const server = createServer((req, res) => {
      fake!.handle(req).then(
        ({ status, body }) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        },
        (error: unknown) => {
          res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify(envelope(null, [{ code: 10000, message: String(error) }])));
        },
      );
    });
    fake = new FakeCloudflareApi(server, options);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake.port = (server.address() as AddressInfo).port;
    return fake;
  }

  /** Value for CLOUDFLARE_API_BASE_URL. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}${API_PREFIX}`;
  }

  /** Script uploads: PUT of a Worker or POST of a new version (multipart with metadata). */
  uploads(): RecordedRequest[] {
    return this.requests.filter((r) => r.metadata !== undefined);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const method = req.method ?? "GET";
    const body = await readBody(req);
    const record: RecordedRequest = { method, path: url.pathname.slice(API_PREFIX.length), query: Object.fromEntries(url.searchParams) };
    const type = req.headers["content-type"] ?? "";
    if (type.startsWith("multipart/form-data")) {
      const form = await new Response(new Uint8Array(body), { headers: { "content-type": type } }).formData();
      const metadata = form.get("metadata");
      if (metadata !== null) record.metadata = JSON.parse(typeof metadata === "string" ? metadata : await metadata.text());
    } else if (body.length > 0 && type.includes("json")) {
      record.json = JSON.parse(body.toString("utf8"));
    }
    this.requests.push(record);
    if (!url.pathname.startsWith(API_PREFIX) || req.headers.authorization !== `Bearer ${this.options.apiToken}`) {
      return { status: 403, body: envelope(null, [{ code: 10000, message: "Authentication error" }]) };
    }
    const result = this.route(method, record);
    if (result === undefined) {
      this.unknown.push(record);
      return { status: 404, body: envelope(null, [{ code: 7003, message: `fake: no route for ${method} ${record.path}` }]) };
    }
    return result;
  }

  private route(method: string, r: RecordedRequest): { status: number; body: unknown } | undefined {
    const account = `/accounts/${this.options.accountId}`;
    if (!r.path.startsWith(`${account}/`)) return undefined;
    const rest = r.path.slice(account.length);
    const ok = (result: unknown) => ({ status: 200, body: envelope(result) });
    const notFound = (code: number) => ({ status: 404, body: envelope(null, [{ code, message: "This Worker does not exist on your account." }]) });

    if (method === "GET" && rest === "/workers/subdomain") return ok({ subdomain: this.options.subdomain });
    if (method === "GET" && rest === "/workers/scripts") return ok([...this.workers.keys()].map((id) => ({ id })));
    if (method === "GET" && (rest === "/storage/kv/namespaces" || rest === "/workers/durable_objects/namespaces")) return ok([]);
    if (method === "POST" && rest === "/workers/observability/telemetry/query") return this.telemetryQuery(r.json);

    const service = /^\/workers\/services\/([^/]+)$/.exec(rest);
    if (service) {
      const worker = this.workers.get(service[1]!);
      if (method === "GET") {
        if (!worker) return notFound(10090);
        return ok({
          id: worker.name,
          default_environment: { environment: "production", script: { id: worker.name, tag: `tag-${worker.name}`, tags: [], last_deployed_from: "wrangler" } },
        });
      }
      if (method === "DELETE") {
        if (this.failDeletes) return { status: 500, body: envelope(null, [{ code: 10013, message: this.failDeletes }]) };
        if (!worker) return notFound(10090);
        this.workers.delete(worker.name);
        return ok(null);
      }
    }

    const settings = /^\/workers\/workers\/([^/]+)$/.exec(rest);
    if (settings && method === "GET") {
      const worker = this.workers.get(settings[1]!);
      if (!worker) return notFound(10007);
      return ok({ id: worker.name, name: worker.name, subdomain: { enabled: worker.workersDev, previews_enabled: worker.workersDev } });
    }

    const script = /^\/workers\/scripts\/([^/]+)(\/.*)?$/.exec(rest);
    if (!script) return undefined;
    const name = script[1]!;
    const sub = script[2] ?? "";
    const worker = this.workers.get(name);
    if (method === "PUT" && sub === "" && r.metadata) {
      const created: FakeWorker = {
        name,
        bindings: r.metadata.bindings ?? [],
        crons: worker?.crons ?? [],
        workersDev: worker?.workersDev ?? false,
        versions: (worker?.versions ?? 0) + 1,
      };
      this.workers.set(name, created);
      return ok({ id: name, etag: `etag-${created.versions}`, deployment_id: versionId(created.versions), startup_time_ms: 1 });
    }
    // An upload session comes before the Worker's first upload.
    if (method === "POST" && sub === "/assets-upload-session") return ok({ jwt: "fake-assets-completion-jwt", buckets: [] });
    if (!worker) return notFound(10007);
    if (method === "GET" && sub === "/secrets") return ok(worker.bindings.filter((b) => b.type === "secret_text").map((b) => ({ name: b.name, type: b.type })));
    if (method === "POST" && sub === "/versions" && r.metadata) {
      worker.versions += 1;
      // bindings_inherit=strict: secrets not re-sent are kept from the previous version.
      const sent = r.metadata.bindings ?? [];
      const kept = worker.bindings.filter((b) => b.type === "secret_text" && !sent.some((s) => s.name === b.name));
      worker.bindings = [...sent.filter((b) => b.type !== "inherit"), ...kept];
      return ok({ id: versionId(worker.versions), resources: { script: { etag: `etag-${worker.versions}` } }, startup_time_ms: 1 });
    }
    if (method === "GET" && sub === "/deployments") {
      return ok({
        deployments: [
          {
            id: `deployment-${worker.versions}`,
            source: "wrangler",
            strategy: "percentage",
            versions: [{ version_id: versionId(worker.versions), percentage: 100 }],
          },
        ],
      });
    }
    if (method === "POST" && sub === "/deployments") return ok({ id: `deployment-${worker.versions}` });
    if (method === "PATCH" && sub === "/script-settings") return ok({});
    if (method === "GET" && sub === "/settings") return ok({ bindings: worker.bindings.map(({ text: _text, ...binding }) => binding) });
    if (method === "GET" && sub === "/schedules") return ok({ schedules: worker.crons.map((cron) => ({ cron })) });
    if (method === "PUT" && sub === "/schedules") {
      worker.crons = Array.isArray(r.json) ? (r.json as { cron: string }[]).map((s) => s.cron) : [];
      return ok({ schedules: worker.crons.map((cron) => ({ cron })) });
    }
    if (method === "GET" && sub === "/subdomain") return ok({ enabled: worker.workersDev, previews_enabled: worker.workersDev });
    if (method === "POST" && sub === "/subdomain") {
      worker.workersDev = (r.json as { enabled?: boolean } | undefined)?.enabled === true;
      return ok({ enabled: worker.workersDev, previews_enabled: worker.workersDev });
    }
    return undefined;
  }

  /** "Run a query" (test/support/fake-telemetry-query.ts), or the error of `failTelemetry`. */
  private telemetryQuery(body: unknown): { status: number; body: unknown } {
    if (this.failTelemetry)
      return { status: this.failTelemetry.status, body: envelope(null, [{ code: this.failTelemetry.code, message: this.failTelemetry.message }]) };
    return telemetryQuery(this.telemetryEvents, body, this.telemetryPageSize);
  }
}

function versionId(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
