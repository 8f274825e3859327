/** Group commit (docs/architecture.md#group-commit): write batches that arrive while a commit runs share the next transaction. */
import type { Database, InStatement, ResultSet } from "../client";

interface Pending {
  statements: InStatement[];
  resolve: (results: ResultSet[]) => void;
  reject: (error: unknown) => void;
}

/** The database port with its write batches group-committed. */
export interface GroupCommitted extends Database {
  /** Resolves once no write batch is queued or committing. */
  drain(): Promise<void>;
}

/** True for SQLite's refusal (a `SQLITE_*` code: rolled back, nothing written); a server's lost or late answer proves nothing. */
function rolledBack(error: unknown): boolean {
  return String((error as { code?: unknown } | null)?.code ?? "").startsWith("SQLITE_");
}

/** The index of the failed statement of a failed batch, when the driver tells it. */
function failedStatementIndex(error: unknown): number | undefined {
  const index = (error as { statementIndex?: unknown } | null)?.statementIndex;
  return typeof index === "number" && Number.isInteger(index) && index >= 0 ? index : undefined;
}

/** `inner` with its write batches group-committed, reads and `execute` straight through; `maxStatements` per merged transaction (a larger batch runs alone). */
export function groupCommit(inner: Database, maxStatements = 2000): GroupCommitted {
  const queue: Pending[] = [];
  let scheduled = false;
  let committing = false;

  /** The next group: queued batches in arrival order, up to `maxStatements`. */
  function takeGroup(): Pending[] {
    let count = 0;
    let end = 0;
    for (const pending of queue) {
      if (end > 0 && count + pending.statements.length > maxStatements) break;
      count += pending.statements.length;
      end += 1;
    }
    return queue.splice(0, end);
  }

  /** Commit `group` as one transaction; on failure, give each batch the outcome it has alone. */
  async function commitGroup(group: Pending[]): Promise<void> {
    if (group.length === 0) return;
    if (group.length === 1) {
      const [only] = group;
      await inner.batch(only!.statements, "write").then(only!.resolve, only!.reject);
      return;
    }
    const statements = group.flatMap((pending) => pending.statements);
    let results: ResultSet[];
    try {
      results = await inner.batch(statements, "write");
    } catch (error) {
      if (!rolledBack(error)) {
        for (const pending of group) pending.reject(error);
        return;
      }
      // The batch that holds the failed statement fails alone; the ones around it commit again.
      const failed = failedStatementIndex(error);
      let end = 0;
      const ends = group.map((pending) => (end += pending.statements.length));
      const at = failed === undefined ? -1 : ends.findIndex((groupEnd) => failed < groupEnd);
      if (at < 0) {
        for (const pending of group) await commitGroup([pending]);
        return;
      }
      await commitGroup(group.slice(0, at));
      await commitGroup([group[at]!]);
      await commitGroup(group.slice(at + 1));
      return;
    }
    let offset = 0;
    for (const pending of group) {
      pending.resolve(results.slice(offset, offset + pending.statements.length));
      offset += pending.statements.length;
    }
  }

  async function commitQueued(): Promise<void> {
    committing = true;
    try {
      while (queue.length > 0) await commitGroup(takeGroup());
    } finally {
      committing = false;
    }
  }

  function schedule(): void {
    if (scheduled || committing) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void commitQueued();
    });
  }

  return {
    execute: (statement) => inner.execute(statement),
    batch(statements, mode) {
      if (mode === "read" || statements.length === 0) return inner.batch(statements, mode);
      return new Promise<ResultSet[]>((resolve, reject) => {
        queue.push({ statements, resolve, reject });
        schedule();
      });
    },
    async drain() {
      while (queue.length > 0 || scheduled || committing) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}
