/** Payload shapes of accounts and API keys (docs/api.md#authentication). */
import { z } from "@hono/zod-openapi";
import { ROLES } from "../../domain/principal";
import { idNumber as id, timestamp } from "../../http/schemas";

export const NewAccountSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(100).openapi({ example: "Ada Lovelace" }),
    email: z.email().max(254).openapi({ description: "Unique case-insensitively.", example: "ada@example.com" }),
  })
  .openapi("NewAccount");

export const AccountSchema = z
  .object({
    id,
    name: z.string(),
    email: z.string().openapi({ format: "email" }),
    role: z.enum(ROLES).openapi({ description: "`customer` from sign-up; `staff` keys come from the operators." }),
    createdAt: timestamp,
  })
  .openapi("Account");

export const ApiKeySchema = z
  .object({
    id,
    name: z
      .string()
      .nullable()
      .openapi({ description: 'The key\'s label: "default" unless one was given (null on keys made unnamed before names defaulted).' }),
    prefix: z.string().openapi({ description: "The first characters of the secret, for recognising it.", example: "psk_Ab12Cd" }),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable().openapi({ description: "Last time the key authenticated a request, to within a minute (written at most once a minute)." }),
  })
  .openapi("ApiKey");

export const ApiKeysSchema = z.array(ApiKeySchema).openapi("ApiKeys");

export const NewApiKeySchema = ApiKeySchema.extend({
  key: z.string().openapi({ description: "The secret (`psk_` + 43 base64url characters). Shown only in this response.", example: "psk_…" }),
}).openapi("NewApiKey");

/** Name of a key created without one, and of the key a sign-up creates (docs/api.md#authentication). */
export const DEFAULT_KEY_NAME = "default";

export const NewApiKeyRequestSchema = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .default(DEFAULT_KEY_NAME)
      .openapi({ description: 'A label for the key; without one it is named "default", like the key a sign-up creates.', example: "ci" }),
  })
  .openapi("NewApiKeyRequest");

export const SignUpSchema = z.object({ account: AccountSchema, apiKey: NewApiKeySchema }).openapi("SignUp", {
  description: "The new account and its first key; the secret is shown only here.",
});
