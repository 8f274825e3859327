/**
 * scripts/lock-platforms.mjs: optional platform packages that the registry
 * does not serve are declared in package-lock.json, gated by os/cpu/libc, so
 * that `npm ci` accepts the lockfile (and the committed lockfile has them all).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { declareMissingPlatforms, platformOf } from "../../scripts/lock-platforms.mjs";

describe("scripts/lock-platforms.mjs", () => {
  it("reads the platform from the package name", () => {
    expect(platformOf("@cloudflare/workerd-darwin-64")).toEqual({ os: "darwin", cpu: "x64", libc: undefined });
    expect(platformOf("@cloudflare/workerd-windows-64")).toEqual({ os: "win32", cpu: "x64", libc: undefined });
    expect(platformOf("@biomejs/cli-linux-arm64-musl")).toEqual({ os: "linux", cpu: "arm64", libc: "musl" });
    expect(platformOf("@biomejs/cli-linux-x64")).toEqual({ os: "linux", cpu: "x64", libc: "glibc" });
    expect(platformOf("left-pad")).toBeUndefined();
  });

  it("declares only what is missing, as optional entries gated by platform", () => {
    const lock = {
      packages: {
        "": { name: "x" },
        "node_modules/tool": {
          version: "1.0.0",
          dev: true,
          optionalDependencies: { "@t/cli-linux-x64": "1.0.0", "@t/cli-darwin-arm64": "1.0.0", mystery: "2.0.0" },
        },
        "node_modules/@t/cli-linux-x64": { version: "1.0.0", os: ["linux"], cpu: ["x64"], optional: true },
      },
    };
    const { added, unknown } = declareMissingPlatforms(lock);
    expect(added).toEqual(["@t/cli-darwin-arm64@1.0.0"]);
    expect(unknown).toEqual(["mystery"]);
    expect(lock.packages["node_modules/@t/cli-darwin-arm64" as keyof typeof lock.packages]).toEqual({
      version: "1.0.0",
      cpu: ["arm64"],
      dev: true,
      optional: true,
      os: ["darwin"],
    });
    expect(Object.keys(lock.packages)[0]).toBe("");
  });

  it("the committed package-lock.json declares every optional platform package", () => {
    const lock = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package-lock.json"), "utf8"));
    expect(declareMissingPlatforms(lock).added).toEqual([]);
  });
});
