/**
 * The Node server's pino logger writes the lines of `jsonLogger` (the Worker's
 * console logger): the same fields and values, ISO time, undefined fields left
 * out, levels below the minimum dropped, warnings and errors on the error stream.
 */
import { describe, expect, it } from "vitest";
import { jsonLogger, type LogLevel } from "../../src/logger";
import { pinoLogger } from "../../src/runtime/node/pino-logger";

const capture = () => {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
};

describe("pinoLogger", () => {
  it("writes the same JSON fields as jsonLogger, at and above its level, errors apart", () => {
    const out = capture();
    const err = capture();
    const logger = pinoLogger("info", { out: out.stream, err: err.stream });
    const viaConsole: { line: string; level: LogLevel }[] = [];
    const reference = jsonLogger("info", (line, level) => viaConsole.push({ line, level }));
    const fields = { requestId: "r1", route: null, status: 200, durationMs: 1.5, accountId: undefined };
    for (const l of [logger, reference]) {
      l.log("debug", "dropped", fields);
      l.log("info", "request", fields);
      l.log("error", "unexpected error", { requestId: "r2" });
    }
    expect([logger.enabled("debug"), logger.enabled("info"), logger.enabled("error")]).toEqual([false, true, true]);
    expect(out.lines).toHaveLength(1);
    expect(err.lines).toHaveLength(1);
    const [info, error] = [JSON.parse(out.lines[0]!), JSON.parse(err.lines[0]!)];
    const [refInfo, refError] = viaConsole.map((v) => JSON.parse(v.line));
    expect(new Date(info.time).toISOString()).toBe(info.time);
    const withoutTime = ({ time: _time, ...rest }: Record<string, unknown>) => rest;
    expect(withoutTime(info)).toEqual(withoutTime(refInfo));
    expect(withoutTime(error)).toEqual(withoutTime(refError));
    expect(Object.keys(info).sort()).toEqual(Object.keys(refInfo).sort());
  });
});
