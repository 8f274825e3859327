/** The docs page's static files (docs/api.md#endpoints: /docs needs no outside network): its script's path, and how a runtime serves them. */
import type { Context } from "hono";
import type { AppEnv } from "./context";

/** Serves a static file of the docs page by path for request `c` (Workers: from its `env.ASSETS`), or null when unknown. */
export type AssetSource = (path: string, c: Context<AppEnv>) => Promise<Response | null>;

/** URL path of the Scalar reference script the /docs page loads. */
export const SCALAR_SCRIPT_PATH = "/docs/assets/scalar.js";
