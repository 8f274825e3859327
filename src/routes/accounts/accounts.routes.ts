/** OpenAPI route definitions of /accounts (docs/api.md#endpoints, #authentication; Accounts tag). */
import { z } from "@hono/zod-openapi";
import { privateResponse } from "../../http/caching";
import { errorResponses, idempotencyKeyHeaders, idempotentReplayedHeader, idParams, jsonBody, jsonContent, paginationQuery } from "../../http/schemas";
import { responseHeaders, operations } from "../../http/schemas";
import { protectedOperation, publicOperation } from "../../middleware/security";
import { signupLimit } from "../../middleware/rate-limit";
import { strictJson } from "../../middleware/strict-json";
import { AccountSchema, ApiKeySchema, ApiKeysSchema, NewAccountSchema, NewApiKeyRequestSchema, NewApiKeySchema, SignUpSchema } from "./accounts.schemas";

const route = operations(["Accounts"]);
const anyKey = protectedOperation("customer", "staff");
const authErrors = [401, 429, 500, 503] as const;

export const signUp = route({
  method: "post",
  path: "/accounts",
  operationId: "createAccount",
  summary: "Sign up",
  description: "Creates a customer account and its first API key. The secret key is in this response only; store it.",
  ...publicOperation,
  middleware: [signupLimit, privateResponse, strictJson],
  request: { body: jsonBody(NewAccountSchema, "Who is signing up.") },
  responses: {
    201: { ...jsonContent(SignUpSchema, "The account and its first key."), headers: { Location: responseHeaders.Location } },
    ...errorResponses([400, 413, 415, 429, 500, 503], { 409: "The email is taken (`duplicate_email`)." }),
  },
});

export const me = route({
  method: "get",
  path: "/accounts/me",
  operationId: "getMyAccount",
  summary: "The caller's account",
  description: "The account that owns the API key of the request (any role).",
  ...anyKey,
  responses: { 200: jsonContent(AccountSchema, "The account of the key."), ...errorResponses([400, ...authErrors]) },
});

export const listKeys = route({
  method: "get",
  path: "/accounts/me/keys",
  operationId: "listMyApiKeys",
  summary: "List the caller's API keys",
  description: 'Active keys of the caller\'s account (at most 100), without secrets, ordered by id; paginated with `Link: rel="next"`.',
  ...anyKey,
  request: { query: z.strictObject({ ...paginationQuery }) },
  responses: {
    200: { ...jsonContent(ApiKeysSchema, "A page of keys."), headers: { Link: responseHeaders.Link } },
    ...errorResponses([400, ...authErrors]),
  },
});

export const createKey = route({
  method: "post",
  path: "/accounts/me/keys",
  operationId: "createMyApiKey",
  summary: "Create an API key",
  description:
    "Creates another key for the caller's account (at most 100 active keys per account). The secret is in this response only. Send `Idempotency-Key` to retry safely: the same key and body within 24 h answers 200 with the key created the first time, without its secret (never shown twice), and `Idempotent-Replayed: true`.",
  ...anyKey,
  request: { headers: idempotencyKeyHeaders, body: { required: false, ...jsonContent(NewApiKeyRequestSchema, "An optional name for the key.") } },
  responses: {
    200: {
      ...jsonContent(ApiKeySchema, "Replay of an earlier request with the same Idempotency-Key: the key it created, without its secret."),
      headers: idempotentReplayedHeader,
    },
    201: jsonContent(NewApiKeySchema, "The new key with its secret."),
    ...errorResponses([400, 413, 415, ...authErrors], {
      409: "The account holds 100 active keys already (`key_limit_reached`), or a request with this Idempotency-Key is still in progress (`concurrent_update`).",
      422: "The Idempotency-Key was used with another body (`idempotency_key_reused`).",
    }),
  },
});

export const revokeKey = route({
  method: "delete",
  path: "/accounts/me/keys/{keyId}",
  operationId: "revokeMyApiKey",
  summary: "Revoke an API key",
  description: "Revokes one of the caller's keys at once (it may be the key making the request).",
  ...anyKey,
  request: { params: idParams("keyId") },
  responses: { 204: { description: "Revoked." }, ...errorResponses([400, 404, ...authErrors]) },
});
