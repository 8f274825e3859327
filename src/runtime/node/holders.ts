/** Claim tokens naming this process on this machine: another process here ends a dead one's claims at once (docs/webhooks.md#design). */
import { readFileSync, readlinkSync } from "node:fs";
import { type Holders, leaseHolders } from "../../services/webhooks/hold";

/** This boot of the machine and this process's PID namespace (Linux /proc), within which a pid can be checked; undefined elsewhere. */
function pidSpace(): string | undefined {
  try {
    return `${readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()}.${readlinkSync("/proc/self/ns/pid").replace(/\D/g, "")}`;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` has exited: signal 0 finds none (ESRCH; EPERM is a live process of another user; kill(2)). */
function hasExited(pid: number): boolean {
  try {
    return !process.kill(pid, 0);
  } catch (error) {
    return (error as { code?: unknown }).code === "ESRCH";
  }
}

/**
 * Holders named `<space>.<pid>.<uuid>`: a token of another process in `space` (default: this boot and PID namespace) whose pid has exited
 * gives its owner, `<space>.<pid>.`; without a space, claims end with their leases. A reused pid looks alive: the lease then ends it.
 */
export function processHolders(space = pidSpace(), pid = process.pid): Holders {
  if (space === undefined) return leaseHolders;
  return {
    token: () => `${space}.${pid}.${crypto.randomUUID()}`,
    exited: (token) => {
      const match = /^(.+)\.(\d+)\.[^.]+$/.exec(token);
      const holder = Number(match?.[2]);
      return match?.[1] === space && holder !== pid && hasExited(holder) ? `${space}.${holder}.` : undefined;
    },
  };
}
