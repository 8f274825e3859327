/**
 * Node's claim tokens (src/runtime/node/holders.ts): a token names its process on this machine, and only a process whose pid has
 * exited, in the same boot and PID namespace, is taken as gone; anything else is left to its lease.
 */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { processHolders } from "../../src/runtime/node/holders";
import { leaseHolders } from "../../src/services/webhooks/hold";

const SPACE = "boot.namespace";

describe("process holders", () => {
  it("names an exited process's tokens by their owner, and no live process's", async () => {
    const exited = processHolders(SPACE, spawnSync(process.execPath, ["-e", ""]).pid!);
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    try {
      const live = processHolders(SPACE, child.pid!);
      const here = processHolders(SPACE);
      const token = exited.token();
      expect(here.exited(token)).toBe(`${token.split(".").slice(0, 3).join(".")}.`);
      expect(here.exited(live.token())).toBeUndefined();
      expect(here.exited(here.token())).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  });

  it("leaves tokens of another boot or namespace, and plain ones, to their leases", () => {
    const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
    const here = processHolders(SPACE);
    expect(here.exited(processHolders("other-boot.namespace", gone).token())).toBeUndefined();
    expect(here.exited(leaseHolders.token())).toBeUndefined();
    expect(here.exited("")).toBeUndefined();
    expect(processHolders().token()).toMatch(/^[0-9a-f-]{36}\.\d+\.\d+\.[0-9a-f-]{36}$/);
  });
});
