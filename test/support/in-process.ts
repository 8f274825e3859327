/**
 * JSON requests to an app in the test's own process (`app.request`, no
 * socket), for tests that count what the app does per request.
 */

/** Anything with Hono's `request(url, init)`. */
export interface InProcessApp {
  request(url: string, init: RequestInit): Response | Promise<Response>;
}

/** An answer; `body` is the parsed JSON, typed by the test that reads it. */
export interface InProcessResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** `call(method, path, key?, body?, headers?)` on `app`: a Bearer `key`, a JSON `body`, the parsed JSON answer (null when empty). */
export function inProcessCaller(app: () => InProcessApp) {
  return async (method: string, path: string, key?: string, body?: unknown, headers: Record<string, string> = {}): Promise<InProcessResponse> => {
    const h: Record<string, string> = { ...headers };
    if (key) h.Authorization = `Bearer ${key}`;
    if (body !== undefined) h["Content-Type"] = "application/json";
    const res = await app().request(`http://localhost${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
}
