/** API key material (docs/api.md#authentication): `psk_` + 32 random bytes in base64url; only its SHA-256 hash and a display prefix are stored. */

import { createHash, randomBytes } from "node:crypto";

export const KEY_PREFIX = "psk_";
const DISPLAY_LENGTH = KEY_PREFIX.length + 6;

/** Lower-case hex SHA-256 of a UTF-8 string (node:crypto: synchronous, several times cheaper than a Web Crypto digest). */
export async function sha256Hex(text: string): Promise<string> {
  return createHash("sha256").update(text).digest("hex");
}

/** A fresh key: the secret (shown once), its display prefix and its hash. */
export async function generateApiKey(): Promise<{ secret: string; prefix: string; hash: string }> {
  const secret = KEY_PREFIX + randomBytes(32).toString("base64url");
  return { secret, prefix: secret.slice(0, DISPLAY_LENGTH), hash: await sha256Hex(secret) };
}

/** True when `token` has the shape of a key (cheap check before any lookup). */
export function looksLikeApiKey(token: string): boolean {
  return /^psk_[A-Za-z0-9_-]{43}$/.test(token);
}
