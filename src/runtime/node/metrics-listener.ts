/**
 * The METRICS_PORT listener (docs/operations.md#metrics), one process or a cluster's primary alike: `GET` and `HEAD /metrics`
 * answer the Prometheus text; another method is 405 with `Allow` (RFC 9110 §15.5.6), another path 404, each with a line saying so.
 */
import { createServer, type Server, type ServerResponse } from "node:http";

/** The text exposition format's media type (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format). */
const EXPOSITION = "text/plain; version=0.0.4; charset=utf-8";
const ALLOWED = ["GET", "HEAD"];

/** End `res` with `status` and one plain-text line. */
function say(res: ServerResponse, status: number, line: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, "Content-Type": "text/plain; charset=utf-8" }).end(`${line}\n`);
}

/**
 * Listen on `address`, answering each scrape with `scrape()`'s text (a HEAD with its headers only; Node drops the body) and refusing
 * anything else; a scrape that rejects is 500 with its message. @throws Error naming METRICS_HOST/METRICS_PORT when the port cannot be bound.
 */
export async function serveMetrics(address: { host: string; port: number }, scrape: () => Promise<string>): Promise<Server> {
  const server = createServer((req, res) => {
    const path = URL.parse(req.url ?? "/", "http://metrics")?.pathname;
    if (path === undefined) return say(res, 400, "Not a request target: the metrics listener serves GET /metrics only.");
    if (path !== "/metrics") return say(res, 404, `${path} is not here: the metrics listener serves GET /metrics only.`);
    if (!ALLOWED.includes(req.method ?? "")) {
      return say(res, 405, `${req.method} is not allowed on /metrics: the metrics listener answers GET and HEAD.`, { Allow: ALLOWED.join(", ") });
    }
    scrape().then(
      (text) => res.writeHead(200, { "Content-Type": EXPOSITION }).end(text),
      (error: unknown) => say(res, 500, `The metrics could not be collected: ${error instanceof Error ? error.message : String(error)}`),
    );
  });
  const bound = new Promise<void>((resolve, reject) => server.once("error", reject).listen(address.port, address.host, resolve));
  await bound.catch((error: NodeJS.ErrnoException) => {
    throw new Error(`Cannot serve metrics on ${address.host}:${address.port} (${error.code ?? String(error)}): set METRICS_HOST/METRICS_PORT.`);
  });
  return server;
}
