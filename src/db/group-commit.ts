/**
 * Group commit (issue 16): write batches that arrive while the database is
 * busy committing run together in the next transaction — one `BEGIN
 * IMMEDIATE … COMMIT`, so one fsync (`synchronous = FULL`) for all of them —
 * in arrival order, and each caller gets the result sets of its own
 * statements only once that transaction has committed. Durability is the
 * same as one transaction per batch: nothing is acknowledged before its
 * commit is on disk.
 *
 * When batches are "arriving while one commits":
 * - embedded file: the driver runs SQL synchronously on the event loop, so a
 *   commit and the requests that arrive meanwhile cannot overlap. Batches are
 *   queued and committed on the next `setImmediate` (the check phase, after the
 *   poll phase has run every request whose bytes arrived): every write of
 *   that turn of the event loop shares one transaction.
 * - libSQL server: a commit is a network round trip; batches queued during it
 *   go together in the next one (one write transaction at a time from this
 *   process, instead of up to 20 contending for the server's write lock).
 *
 * Isolation between merged batches. Each batch keeps its own statements and
 * results; what one batch's statements could see of another's:
 * - `changes()` and `last_insert_rowid()` are per connection, so a batch whose
 *   FIRST statement reads them would read the previous batch's last write.
 *   Every batch of the app writes before it reads them (each guard follows
 *   the statement it guards, in the same batch); a batch that does not is
 *   committed alone, never merged: it is sent with `write(…, { mergeable: false })`.
 * - Later batches see the rows earlier ones wrote: exactly what they would
 *   see if the earlier batches had committed first, which is the order they
 *   arrived in.
 * Failure: a merged transaction that fails is rolled back whole. When the
 * driver says which statement failed (`LibsqlBatchError.statementIndex`), the
 * batches before it are committed together again, the failing batch alone
 * (so its caller gets its own error, e.g. a UNIQUE violation → 409), and the
 * rest again as a group; otherwise every batch runs alone. Each request
 * therefore keeps the outcome it would have had alone.
 */
import type { Client, InArgs, InStatement, Replicated, ResultSet, Transaction, TransactionMode } from "@libsql/client";
import { LibsqlError } from "@libsql/client";

type Statement = InStatement | [string, InArgs?];

interface Pending {
  statements: Statement[];
  /** False for a batch that must commit alone (see `write`). */
  mergeable: boolean;
  resolve: (results: ResultSet[]) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /** Most statements in one merged transaction (default 2,000); a single larger batch still runs, alone. */
  maxStatements?: number;
}

/** The index of the failed statement of a failed batch, when the driver tells it. */
function failedStatementIndex(error: unknown): number | undefined {
  const index = (error as { statementIndex?: unknown } | null)?.statementIndex;
  return typeof index === "number" && Number.isInteger(index) && index >= 0 ? index : undefined;
}

/**
 * A libSQL `Client` whose `batch(…, "write")` calls are group-committed (see
 * the module comment); every other call goes straight to `inner`.
 */
export class GroupCommitClient implements Client {
  readonly #inner: Client;
  readonly #maxStatements: number;
  #queue: Pending[] = [];
  #scheduled = false;
  #committing = false;

  constructor(inner: Client, options: GroupCommitOptions = {}) {
    this.#inner = inner;
    this.#maxStatements = options.maxStatements ?? 2000;
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  get protocol(): string {
    return this.#inner.protocol;
  }

  /**
   * A write batch, queued; resolves once its transaction has committed.
   * `mergeable`: the batch may share a transaction with others (its statements
   * read no connection state left by another batch); else it commits alone.
   */
  write(stmts: Statement[], options: { mergeable: boolean }): Promise<ResultSet[]> {
    if (stmts.length === 0) return this.#inner.batch(stmts, "write");
    if (this.#inner.closed) return Promise.reject(new LibsqlError("The client is closed", "CLIENT_CLOSED"));
    return new Promise<ResultSet[]>((resolve, reject) => {
      this.#queue.push({ statements: stmts, mergeable: options.mergeable, resolve, reject });
      this.#schedule();
    });
  }

  /** `mode` "write": queued, committed alone (it declares nothing about merging; see `write`). Other modes: straight through. */
  batch(stmts: Statement[], mode?: TransactionMode): Promise<ResultSet[]> {
    return mode === "write" ? this.write(stmts, { mergeable: false }) : this.#inner.batch(stmts, mode);
  }

  #schedule(): void {
    if (this.#scheduled || this.#committing) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#drain();
    });
  }

  /** Commit queued batches, group by group, until the queue is empty. */
  async #drain(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) await this.#commitGroup(this.#takeGroup());
    } finally {
      this.#committing = false;
    }
  }

  /** The next group: queued batches in arrival order, up to `maxStatements`; a batch that is not mergeable goes alone. */
  #takeGroup(): Pending[] {
    const first = this.#queue[0]!;
    if (!first.mergeable) return this.#queue.splice(0, 1);
    let count = 0;
    let end = 0;
    for (const pending of this.#queue) {
      if (end > 0 && (count + pending.statements.length > this.#maxStatements || !pending.mergeable)) break;
      count += pending.statements.length;
      end += 1;
    }
    return this.#queue.splice(0, end);
  }

  /** Commit `group` as one transaction; on failure, give each batch the outcome it has alone (module comment). */
  async #commitGroup(group: Pending[]): Promise<void> {
    if (group.length === 0) return;
    if (group.length === 1) {
      const [only] = group;
      await this.#inner.batch(only!.statements, "write").then(only!.resolve, only!.reject);
      return;
    }
    let results: ResultSet[];
    try {
      results = await this.#inner.batch(
        group.flatMap((pending) => pending.statements),
        "write",
      );
    } catch (error) {
      const failed = failedStatementIndex(error);
      if (failed === undefined) {
        for (const pending of group) await this.#commitGroup([pending]);
        return;
      }
      // The batch that holds the failed statement, and the ones around it.
      let offset = 0;
      const at = group.findIndex((pending) => {
        offset += pending.statements.length;
        return failed < offset;
      });
      if (at < 0) {
        for (const pending of group) await this.#commitGroup([pending]);
        return;
      }
      await this.#commitGroup(group.slice(0, at));
      await this.#commitGroup([group[at]!]);
      await this.#commitGroup(group.slice(at + 1));
      return;
    }
    let offset = 0;
    for (const pending of group) {
      pending.resolve(results.slice(offset, offset + pending.statements.length));
      offset += pending.statements.length;
    }
  }

  execute(stmtOrSql: InStatement | string, args?: InArgs): Promise<ResultSet> {
    return typeof stmtOrSql === "string" ? this.#inner.execute(stmtOrSql, args) : this.#inner.execute(stmtOrSql);
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.#inner.migrate(stmts);
  }

  transaction(mode?: TransactionMode): Promise<Transaction> {
    return this.#inner.transaction(mode);
  }

  executeMultiple(sql: string): Promise<void> {
    return this.#inner.executeMultiple(sql);
  }

  sync(): Promise<Replicated> {
    return this.#inner.sync();
  }

  reconnect(): void {
    this.#inner.reconnect();
  }

  /** Close `inner` at once; batches still queued are refused with `CLIENT_CLOSED` (none were acknowledged). */
  close(): void {
    for (const pending of this.#queue.splice(0)) pending.reject(new LibsqlError("The client was closed before the batch ran", "CLIENT_CLOSED"));
    this.#inner.close();
  }

  /**
   * Commit the batches already queued (their callers get their results), then
   * close with `closeInner` (default: `inner.close()`), e.g. a checkpointed close.
   */
  async closeGracefully(closeInner: () => void | Promise<void> = () => this.#inner.close()): Promise<void> {
    while (this.#queue.length > 0 || this.#scheduled || this.#committing) await new Promise((resolve) => setImmediate(resolve));
    await closeInner();
  }
}

/**
 * Send a write batch of statements that read no connection state left by
 * another batch (a plan's first step is never guarded, src/db/plan.ts): group-
 * committed when `client` is a `GroupCommitClient`, else one `batch(…, "write")`.
 */
export function sendWrite(client: Client, statements: InStatement[]): Promise<ResultSet[]> {
  return client instanceof GroupCommitClient ? client.write(statements, { mergeable: true }) : client.batch(statements, "write");
}
