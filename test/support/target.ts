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
  /** Release resources (database files, processes). */
  close(): Promise<void>;
}
