/**
 * The METRICS_PORT listener's requests (docs/operations.md#metrics), one process or a cluster's primary alike: `GET` and `HEAD /metrics`
 * answer the Prometheus text; another method is 405 with `Allow` (RFC 9110 §15.5.6), another path 404, each with a line saying so.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";

/** The text exposition format's media type (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format). */
const EXPOSITION = "text/plain; version=0.0.4; charset=utf-8";
const ALLOWED = ["GET", "HEAD"];

/** End `res` with `status` and one plain-text line. */
function say(res: ServerResponse, status: number, line: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, "Content-Type": "text/plain; charset=utf-8" }).end(`${line}\n`);
}

/** Answer `req` unless it is a scrape (`GET`/`HEAD /metrics`): true when it was refused. */
function refused(req: IncomingMessage, res: ServerResponse): boolean {
  let path: string;
  try {
    path = new URL(req.url ?? "/", "http://metrics").pathname;
  } catch {
    say(res, 400, "Not a request target: the metrics listener serves GET /metrics only.");
    return true;
  }
  if (path !== "/metrics") say(res, 404, `${path} is not here: the metrics listener serves GET /metrics only.`);
  else if (!ALLOWED.includes(req.method ?? "")) {
    say(res, 405, `${req.method} is not allowed on /metrics: the metrics listener answers GET and HEAD.`, { Allow: ALLOWED.join(", ") });
  } else return false;
  return true;
}

/**
 * A request listener that answers each scrape with `scrape()`'s text (a HEAD with its headers only; Node drops the body), and refuses
 * anything else. A scrape that rejects is 500 with its message.
 */
export function metricsRequests(scrape: () => Promise<string>): RequestListener {
  return (req, res) => {
    if (refused(req, res)) return;
    scrape().then(
      (text) => res.writeHead(200, { "Content-Type": EXPOSITION }).end(text),
      (error: unknown) => say(res, 500, `The metrics could not be collected: ${error instanceof Error ? error.message : String(error)}`),
    );
  };
}
