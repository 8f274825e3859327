/**
 * The docs name only what the repository holds: every repository path that
 * README.md, bench/README.md and docs/*.md name (in backticks, in code blocks or as a link
 * target) exists, every link to a Markdown file of the repository lands on a
 * heading that exists, and so does every `docs/<page>.md#anchor` cited from
 * code. No file of src/, test/, scripts/, bench/, docs/, examples/, .github/ or
 * README.md cites a file outside the repository (the contract is docs/api.md).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/sqld";

/** First path segments that name files of the repository (not build output, data or node_modules). */
const ROOTS = new Set(["src", "test", "scripts", "docs", "drizzle", "examples", "bench", ".github", ".ci"]);

/** Where a path's template begins (`src/routes/<r>/`, `test/resources/...`, `src/runtime/{node,workers}/`, `*.ts`). */
const TEMPLATE = /[<>…*{}$|]|\.\.\./;

/** README.md, bench/README.md and every Markdown page of docs/, relative to the root. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", "bench/README.md", ...docs];
}

/** Every text file under `dirs` (and the single files of `files`), relative to the root. */
function sourceFiles(dirs: string[], files: string[]): string[] {
  const out = [...files];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules") walk(path);
      } else if (/\.(ts|mts|mjs|js|md|yml|yaml|json|jsonc|toml|sql|sh)$/.test(entry.name)) {
        out.push(path);
      }
    }
  };
  for (const dir of dirs) if (existsSync(join(ROOT, dir))) walk(dir);
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown file's headings (outside code blocks), with GitHub's `-1` suffixes for repeats. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** A token as a repository path, or undefined when it names none (a media type, a command, a URL). */
function repositoryPath(token: string): string | undefined {
  const path = token
    .replace(/^[("'[]+/, "")
    .replace(/[)"'\],.;:]+$/, "")
    .replace(/#.*$/, "")
    .replace(/:\d+(-\d+)?$/, "");
  const first = path.split("/")[0]!;
  if (!path.includes("/") || !ROOTS.has(first)) return undefined;
  return path;
}

/** Whether `path` (maybe a template) exists: a template needs the folders before its first templated segment. */
function exists(path: string): boolean {
  const segments = path.split("/").filter((s) => s !== "");
  const fixed: string[] = [];
  for (const segment of segments) {
    if (TEMPLATE.test(segment)) break;
    fixed.push(segment);
  }
  const target = join(ROOT, ...fixed);
  if (!existsSync(target)) return false;
  // `src/routes/<r>/` names a folder: what comes before the template must be one.
  return fixed.length === segments.length || statSync(target).isDirectory();
}

/** Inline code spans, the words of code blocks, and link targets of a Markdown text, each with its line. */
function mentions(markdown: string): { code: { token: string; line: number }[]; links: { target: string; line: number }[] } {
  const code: { token: string; line: number }[] = [];
  const links: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split("\n").forEach((text, index) => {
    const line = index + 1;
    if (/^\s*```/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (fenced) {
      for (const token of text.split(/\s+/)) code.push({ token, line });
      return;
    }
    for (const [, span] of text.matchAll(/`([^`]+)`/g)) for (const token of span!.split(/\s+/)) code.push({ token, line });
    const prose = text.replace(/`[^`]*`/g, "");
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ target: target!, line });
  });
  return { code, links };
}

/** What is wrong with the paths and links of one Markdown file (empty: nothing). */
function problemsOf(file: string): string[] {
  const markdown = readFileSync(join(ROOT, file), "utf8");
  const { code, links } = mentions(markdown);
  const problems: string[] = [];
  for (const { token, line } of code) {
    if (token.startsWith("../")) {
      const absolute = resolve(ROOT, dirname(file), token.replace(/[)"'\],.;:]+$/, ""));
      if (relative(ROOT, absolute).startsWith("..")) problems.push(`${file}:${line} names ${token}, outside the repository`);
      else if (!existsSync(absolute)) problems.push(`${file}:${line} names ${token}, which does not exist`);
      continue;
    }
    const path = repositoryPath(token);
    if (path !== undefined && !exists(path)) problems.push(`${file}:${line} names ${path}, which does not exist`);
  }
  for (const { target, line } of links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
    const [pathPart, anchor] = target.split("#") as [string, string | undefined];
    const absolute = pathPart === "" ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURI(pathPart));
    const inside = relative(ROOT, absolute);
    if (inside.startsWith("..")) {
      problems.push(`${file}:${line} links ${target}, outside the repository`);
      continue;
    }
    if (!existsSync(absolute)) {
      problems.push(`${file}:${line} links ${target}, which does not exist`);
      continue;
    }
    if (anchor && absolute.endsWith(".md") && !anchorsOf(readFileSync(absolute, "utf8")).has(anchor)) {
      problems.push(`${file}:${line} links ${target}: ${inside} has no heading #${anchor}`);
    }
  }
  return problems;
}

/** Citations of a file outside the repository: the old contract and style guide, and sibling folders. */
const OUTSIDE = [/\.\.\/shared\b/, /\bshared\/API\.md/, /\bAPI\.md\s*§/, /\bSTYLE\.md\b/, /\/work\/shared\b/];

const SELF = relative(ROOT, new URL(import.meta.url).pathname);

describe("paths named by the docs", () => {
  it("recognises repository paths and templates", () => {
    expect(repositoryPath("src/db/plan.ts,")).toBe("src/db/plan.ts");
    expect(repositoryPath("(docs/caching.md#tags)")).toBe("docs/caching.md");
    expect(repositoryPath("application/json")).toBeUndefined();
    expect(repositoryPath("file:.data/petstore.db")).toBeUndefined();
    expect(exists("src/routes/<r>/")).toBe(true);
    expect(exists("src/nowhere/<r>/")).toBe(false);
    expect(exists("test/resources/...")).toBe(true);
    expect(exists("src/app.ts/<x>")).toBe(false);
    expect(slug("Idempotency-Key and orders")).toBe("idempotency-key-and-orders");
    expect(slug("Node: read-cache hits before the app")).toBe("node-read-cache-hits-before-the-app");
  });

  it.each(markdownFiles())("%s names only files that exist and headings that exist", (file) => {
    expect(problemsOf(file)).toEqual([]);
  });

  it("every docs/<page>.md#anchor cited from code lands on a heading", () => {
    const problems: string[] = [];
    for (const file of sourceFiles(["src", "test", "scripts", "bench", "examples"], [])) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const [, page, anchor] of text.matchAll(/\bdocs\/([\w-]+\.md)(?:#([\w-]+))?/g)) {
        const target = join(ROOT, "docs", page!);
        if (!existsSync(target)) problems.push(`${file} cites docs/${page}, which does not exist`);
        else if (anchor && !anchorsOf(readFileSync(target, "utf8")).has(anchor)) problems.push(`${file} cites docs/${page}#${anchor}: no such heading`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("no file cites a file outside the repository", () => {
    const problems: string[] = [];
    for (const file of sourceFiles(["src", "test", "scripts", "bench", "docs", "examples", ".github"], ["README.md"])) {
      if (file === SELF) continue;
      readFileSync(join(ROOT, file), "utf8")
        .split("\n")
        .forEach((text, index) => {
          if (OUTSIDE.some((pattern) => pattern.test(text))) problems.push(`${file}:${index + 1}: ${text.trim()}`);
        });
    }
    expect(problems).toEqual([]);
  });
});
