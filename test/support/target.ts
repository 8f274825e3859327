import type { Database } from "../../src/db/client";

/**
 * What an end-to-end scenario runs against: the Node app over an embedded file
 * database, or the Worker under workerd over sqld. Scenarios only see this.
 */
export interface Target {
  /** Name for test titles ("node", "worker"). */
  name: string;
  /** Send a request to the API under test; `path` starts with `/`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** An API key of a staff account. */
  staffKey: string;
  /** The database the API under test uses (Node and Worker targets), for states no request of this version makes. */
  db?: Database;
  /** Run webhook dispatch now (Node: one run in-process; Worker: its Cron Trigger); the Worker also dispatches after each write by itself. */
  dispatch?(): Promise<void>;
  /** Release resources (database files, processes). */
  close(): Promise<void>;
}
