/**
 * Global setup of the vitest projects "node" and "node-alone": the `npm start`
 * bundle, built once for the run (test/support/server-bundle.ts) and removed
 * after it.
 */
import type { TestProject } from "vitest/node";
import { buildServerBundleInto } from "./server-bundle";

export default function setup(project: TestProject): () => void {
  const bundle = buildServerBundleInto();
  project.provide("serverBundle", bundle.path);
  return bundle.remove;
}
