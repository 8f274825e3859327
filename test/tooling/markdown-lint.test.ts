/**
 * `npm run lint:md` (markdownlint-cli2 with .markdownlint-cli2.jsonc): broken
 * tables fail, whether rows of pipes lack their delimiter row
 * (scripts/markdownlint-table-rows.mjs) or a row has the wrong column count
 * (MD056); well-formed tables and pipes inside code blocks pass.
 */
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/sqld";

/** markdownlint-cli2's programmatic entry (the package ships no type declarations). */
type Main = (params: {
  directory: string;
  argv: string[];
  noGlobs: boolean;
  nonFileContents: Record<string, string>;
  logMessage: (line: string) => void;
  logError: (line: string) => void;
}) => Promise<number>;
const CLI2: string = "markdownlint-cli2";
const { main } = (await import(CLI2)) as { main: Main };

/** Lint `markdown` with the repository's configuration; the error lines, without file names. */
async function lint(markdown: string): Promise<string[]> {
  const errors: string[] = [];
  await main({
    directory: ROOT,
    argv: [],
    noGlobs: true,
    nonFileContents: { [`${ROOT}/sample.md`]: markdown },
    logMessage: () => {},
    logError: (line: string) => errors.push(line),
  });
  return errors;
}

describe("markdown lint", () => {
  it("fails pipe rows that have no delimiter row", async () => {
    const errors = await lint("# Title\n\nText:\n\n| a | b |\n| 1 | 2 |\n");
    expect(errors.join("\n")).toMatch(/sample\.md:5 error table-delimiter-row/);
  });

  it("fails a row with a missing cell", async () => {
    const errors = await lint("# Title\n\n| a | b |\n|---|---|\n| 1 |\n");
    expect(errors.join("\n")).toMatch(/MD056\/table-column-count/);
  });

  it("passes well-formed tables, pipes in code blocks, and long lines", async () => {
    const long = "word ".repeat(60).trim();
    const errors = await lint(`# Title\n\n${long}\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n\`\`\`text\n| not | a table |\n| just | text |\n\`\`\`\n`);
    expect(errors).toEqual([]);
  });
});
