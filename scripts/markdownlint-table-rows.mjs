/**
 * markdownlint rule `table-delimiter-row` (.markdownlint-cli2.jsonc): rows of
 * pipes that do not render as a table because their delimiter row (`|---|`)
 * is missing. GFM parses such lines as one paragraph (GitHub Flavored Markdown
 * spec, "Tables": the delimiter row is required), so the built-in table rules
 * (MD055, MD056, MD058) never see them.
 */

/** Every token of `tokens` and of their children, depth first. */
function* walk(tokens) {
  for (const token of tokens) {
    yield token;
    yield* walk(token.children);
  }
}

/** @type {import("markdownlint").Rule} */
export default {
  names: ["table-delimiter-row"],
  description: "Table rows without a delimiter row",
  tags: ["table"],
  parser: "micromark",
  function: (params, onError) => {
    for (const token of walk(params.parsers.micromark.tokens)) {
      if (token.type !== "paragraph" || token.endLine === token.startLine) continue;
      const lines = params.lines.slice(token.startLine - 1, token.endLine).map((line) => line.trim());
      if (lines.every((line) => line.startsWith("|") && line.endsWith("|"))) {
        onError({
          lineNumber: token.startLine,
          detail: "Pipe rows render as text: add a delimiter row (| --- |) under the header row.",
          context: lines[0],
        });
      }
    }
  },
};
