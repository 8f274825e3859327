/**
 * The docs page's static files (docs/api.md#endpoints: /docs renders with no outside
 * network): where the page loads its script from, and how a runtime serves it
 * (Node: from node_modules, src/runtime/node/assets.ts; Workers: static assets).
 */
import type { Context } from "hono";
import type { AppEnv } from "./context";

/** Serves a static file of the docs page by path for request `c` (Workers: from its `env.ASSETS`), or null when unknown. */
export type AssetSource = (path: string, c: Context<AppEnv>) => Promise<Response | null>;

/** URL path of the Scalar reference script the /docs page loads. */
export const SCALAR_SCRIPT_PATH = "/docs/assets/scalar.js";
