/** The database port over a file other processes write too: SQLITE_BUSY waited out (docs/architecture.md#sharing-the-database). */
import { accessSync, constants, statSync } from "node:fs";
import { dirname } from "node:path";
import { LibsqlError } from "@libsql/client";
import type { Database } from "../client";
import { aroundRoundTrips } from "../plan";
import type { NativeFile } from "./native-file";
import { isBusy, waitOutBusy } from "./remote";

/** Device and inode of a file: what identifies it while a path may be re-pointed. */
function identityOf(path: string): { dev: number; ino: number } | undefined {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats ? { dev: stats.dev, ino: stats.ino } : undefined;
}

/** The port over a shared file, with what the server needs of the file. */
export interface SharedFile extends Database {
  /** @throws LibsqlError `SQLITE_CANTOPEN` when the path names another file now, `SQLITE_READONLY` when the file or its folder is read-only. */
  assertWritable(): void;
  /** Close after checkpointing the WAL into the file and, as its last user, removing `-wal`/`-shm` (docs/internals.md#opening-the-database). */
  closeCheckpointed(): Promise<void>;
}

/** `file` (busy timeout 0, the existing file at `path`) with SQLITE_BUSY waited out for `lockWaitMs` and its identity checked. @throws LibsqlError SQLITE_CANTOPEN (no file). */
export function sharedFile(file: NativeFile, path: string, lockWaitMs: number): SharedFile {
  const opened = identityOf(path);
  if (!opened) throw new LibsqlError(`The database file ${path} does not exist.`, "SQLITE_CANTOPEN");
  /** The connection saw SQLITE_BUSY and must be replaced (docs/architecture.md#sharing-the-database). */
  let stale = false;

  const assertSameFile = () => {
    const now = identityOf(path);
    if (!now || now.dev !== opened.dev || now.ino !== opened.ino) {
      throw new LibsqlError(`The database file ${path} was ${now ? "replaced" : "deleted"} while the server ran; restart it.`, "SQLITE_CANTOPEN");
    }
  };

  /** Run `operation` (on a fresh connection after SQLITE_BUSY), waiting out SQLITE_BUSY; then check the file. */
  const guarded = <T>(operation: () => Promise<T>): Promise<T> =>
    waitOutBusy(async () => {
      try {
        if (stale) {
          file.reconnect();
          stale = false;
        }
        const result = await operation();
        assertSameFile();
        return result;
      } catch (error) {
        if (isBusy(error)) stale = true;
        throw error;
      }
    }, lockWaitMs);

  return {
    ...aroundRoundTrips(file, guarded),
    assertWritable() {
      assertSameFile();
      try {
        accessSync(path, constants.W_OK);
        accessSync(dirname(path), constants.W_OK);
      } catch (error) {
        throw new LibsqlError(`The database file ${path} cannot be written: ${(error as Error).message}`, "SQLITE_READONLY");
      }
    },
    async closeCheckpointed() {
      try {
        assertSameFile();
        await file.execute("PRAGMA wal_checkpoint(TRUNCATE)");
        await file.execute("PRAGMA journal_mode = DELETE");
      } catch (error) {
        if (!isBusy(error) && !String((error as { code?: unknown }).code).startsWith("SQLITE_CANTOPEN")) throw error;
      } finally {
        file.close();
      }
    },
  };
}
