/** Accounts and their API keys (docs/api.md#authentication), as the API shows them. */
import type { Role } from "./principal";

/** Account representation. */
export interface Account {
  id: number;
  name: string;
  email: string;
  role: Role;
  createdAt: string;
}

/** ApiKey representation (no secret). */
export interface ApiKey {
  id: number;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** ApiKey plus its secret, only in the response that creates it. */
export interface NewApiKey extends ApiKey {
  key: string;
}
