/** What the metrics listener (METRICS_PORT) answers besides a scrape: shared by the single-process and the cluster metrics tests. */
import { request } from "node:http";
import { expect } from "vitest";

/** One request to 127.0.0.1:`port`: status, headers and body (`fetch` refuses a body on HEAD and hides one on 405s alike). */
function send(port: number, method: string, path: string): Promise<{ status: number; allow?: string; type?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, type: res.headers["content-type"], body }));
    });
    req.on("error", reject).end();
  });
}

/**
 * Assert that the listener on `port` serves GET and HEAD /metrics, answers any other method 405 with `Allow: GET, HEAD` (RFC 9110
 * §15.5.6) and any other path 404, each with a plain-text body that says what happened.
 */
export async function expectHonestMetricsListener(port: number): Promise<void> {
  const get = await send(port, "GET", "/metrics");
  expect(get.status).toBe(200);
  expect(get.body).toMatch(/^# HELP /m);
  const head = await send(port, "HEAD", "/metrics");
  expect([head.status, head.type, head.body]).toEqual([200, get.type, ""]);
  for (const method of ["POST", "PUT", "DELETE"]) {
    const res = await send(port, method, "/metrics");
    expect([res.status, res.allow, res.type], method).toEqual([405, "GET, HEAD", "text/plain; charset=utf-8"]);
    expect(res.body).toBe(`${method} is not allowed on /metrics: the metrics listener answers GET and HEAD.\n`);
  }
  for (const path of ["/", "/nope", "/metrics/x"]) {
    const res = await send(port, "GET", path);
    expect([res.status, res.type], path).toEqual([404, "text/plain; charset=utf-8"]);
    expect(res.body).toBe(`${path} is not here: the metrics listener serves GET /metrics only.\n`);
  }
}
