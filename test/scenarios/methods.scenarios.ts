/**
 * Methods the router does not route (issue 11, docs/api.md#errors: every non-2xx
 * response is an Error object), shared by both runtimes over real sockets: the
 * Node server as a child process (test/resources/methods.test.ts) and the Worker
 * under workerd (test/worker/methods.test.ts).
 *
 * The rule (RFC 9110): a method that no route supports for any resource is 501
 * `not_implemented` (§15.6.2), on every path; a method some route supports is
 * 405 `method_not_allowed` with `Allow` on a path that exists without it
 * (§15.5.6), and 404 on a path that does not exist. TRACE is sent
 * over a raw socket because `fetch` refuses it.
 */
import { describe, expect, it } from "vitest";
import { rawRequest, type RawResponse } from "../support/raw-http";

/** A target reachable over a real socket. */
export interface SocketTarget {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
}

/** Assert an Error object of docs/api.md#errors with `status` and `code`, and the response's X-Request-Id. */
export function expectRawError(res: RawResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).toMatchObject({ code, status, message: expect.any(String), requestId: res.headers["x-request-id"] });
}

/** Methods both runtimes' HTTP parsers accept, none of which any route supports. */
export const UNROUTED_METHODS = ["TRACE", "PROPFIND", "MKCOL", "PURGE", "SEARCH"];

/** Register the method scenarios against the target `getTarget()` returns. */
export function methodScenarios(getTarget: () => SocketTarget): void {
  describe("methods no route supports", () => {
    it.each(UNROUTED_METHODS.flatMap((method) => ["/pets", "/store/inventory", "/health", "/nope"].map((path) => [method, path])))(
      "%s %s → 501 not_implemented (RFC 9110 §15.6.2), an Error object",
      async (method, path) => {
        const res = await rawRequest(getTarget().url, method, path);
        expectRawError(res, 501, "not_implemented");
        expect(res.body.message).toContain(method);
      },
    );

    it("a routed method on a path without it is still 405 with Allow, on an unknown path 404", async () => {
      const res = await rawRequest(getTarget().url, "DELETE", "/pets");
      expectRawError(res, 405, "method_not_allowed");
      expect(res.headers.allow!.split(/,\s*/)).toEqual(expect.arrayContaining(["GET", "POST"]));
      expectRawError(await rawRequest(getTarget().url, "PATCH", "/nope"), 404, "not_found");
    });

    it("the server keeps serving afterwards", async () => {
      const res = await fetch(`${getTarget().url}/health`);
      expect(res.status).toBe(200);
      await res.body?.cancel();
    });
  });
}
