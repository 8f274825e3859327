/** Who is calling (docs/api.md#authentication): the roles of API keys and the authenticated principal. */

/** Roles of an account, hence of its keys: `customer` orders, `staff` manages the store. */
export const ROLES = ["customer", "staff"] as const;
export type Role = (typeof ROLES)[number];

/** The authenticated caller: the account and key of a verified `Authorization: Bearer` key. */
export interface Principal {
  accountId: number;
  role: Role;
  apiKeyId: number;
}
