/** Idempotency-Key (docs/api.md#idempotency-key) as the layers share it: a request's claim on its key, and the stored response a later one replays. */

/** A request claiming an Idempotency-Key: whose, which key, what request (`fingerprint`), its random claim token, at what time. */
export interface KeyClaim {
  accountId: number;
  key: string;
  method: string;
  path: string;
  /** Hex SHA-256 of `[method, path, body]` as JSON with sorted keys (`requestFingerprint`, src/services/idempotency.service.ts). */
  fingerprint: string;
  /** Random token stored on the claim: only this request records or releases the row. */
  token: string;
  now: Date;
}

/** A stored response to send again, with `Idempotent-Replayed: true`. */
export interface StoredResponse {
  status: number;
  /** The body as stored (JSON text). */
  body: string;
  headers: Record<string, string>;
}

/** What a creation honouring an Idempotency-Key answers: the resource it created, or the key's stored response to replay. */
export type Creation<T> = { created: T; replay?: undefined } | { created?: undefined; replay: StoredResponse };
