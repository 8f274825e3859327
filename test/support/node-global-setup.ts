/**
 * Global setup of the vitest projects that start the Node server ("node",
 * "resources", "node-alone"): the `npm start` bundle, built once for the run
 * (test/support/server-bundle.ts), shared by the projects of the run (held on
 * the main process's globalThis, counted) and removed after the last.
 */
import type { TestProject } from "vitest/node";
import { buildServerBundleInto } from "./server-bundle";

const shared = globalThis as { petstoreServerBundle?: { path: string; remove: () => void; users: number } };

export default function setup(project: TestProject): () => void {
  shared.petstoreServerBundle ??= { ...buildServerBundleInto(), users: 0 };
  const bundle = shared.petstoreServerBundle;
  bundle.users += 1;
  project.provide("serverBundle", bundle.path);
  return () => {
    bundle.users -= 1;
    if (bundle.users > 0) return;
    bundle.remove();
    shared.petstoreServerBundle = undefined;
  };
}
