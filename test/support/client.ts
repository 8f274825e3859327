/**
 * A small HTTP client for scenarios: JSON in and out, bearer keys, and every
 * response checked against the served OpenAPI document.
 */
import { expect } from "vitest";
import { OpenApiValidator } from "./openapi-validator";
import type { Target } from "./target";

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or the text when not JSON, or null when empty. */
  body: T;
}

export interface RequestOptions {
  /** Bearer key; `null` sends none. Default: none. */
  key?: string | null;
  headers?: Record<string, string>;
  /** Send this string as the body instead of JSON-encoding `body`. */
  rawBody?: string;
  /** Skip the document check (for raw protocol probes). */
  unchecked?: boolean;
}

export class ApiClient {
  constructor(
    readonly target: Target,
    readonly validator: OpenApiValidator,
  ) {}

  /** Send a request; JSON-encodes `body` unless `rawBody` is given. */
  async request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    let payload: string | undefined = options.rawBody;
    if (payload === undefined && body !== undefined) {
      payload = JSON.stringify(body);
      headers["Content-Type"] ??= "application/json";
    }
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    const res = await this.target.fetch(path, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!options.unchecked && method !== "HEAD" && method !== "OPTIONS") {
      const problems = this.validator.check({ method, path, status: res.status, body: parsed });
      expect(problems, `${method} ${path} → ${res.status} ${text.slice(0, 300)}`).toEqual([]);
    }
    if (res.status >= 400 && res.status !== 405 && text && !options.unchecked) {
      expect((parsed as { status?: number }).status, "Error.status equals the HTTP status").toBe(res.status);
    }
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>("GET", path, undefined, options);
  }
  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("POST", path, body, options);
  }
  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("PUT", path, body, options);
  }
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>("PATCH", path, body, options);
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>("DELETE", path, undefined, options);
  }
}

/** Connect to a target: fetch its document and build the response checker. */
export async function connect(target: Target): Promise<ApiClient> {
  const res = await target.fetch("/openapi.json");
  if (res.status !== 200) throw new Error(`GET /openapi.json → ${res.status}`);
  return new ApiClient(target, await OpenApiValidator.create(await res.json()));
}

let counter = 0;
/** A name no other test uses (runs and files share nothing but this process). */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix} ${Date.now().toString(36)}-${process.pid}-${counter}`;
}
