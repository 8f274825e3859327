/**
 * An OTLP/HTTP receiver that discards what it gets, for `npm run bench` with traces on (bench/README.md):
 * `node scripts/with-node.mjs tsx bench/otlp-sink.ts [port]` (default 4318) answers every POST 200 and, on SIGINT or SIGTERM, prints the
 * requests and bytes it received.
 */
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 4318);
let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
  });
  req.on("end", () => {
    requests += 1;
    res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
  });
});
server.listen(port, "127.0.0.1", () => console.error(`otlp-sink on http://127.0.0.1:${port}`));
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    console.error(`otlp-sink: ${requests} posts, ${bytes} bytes`);
    process.exit(0);
  });
}
