/**
 * A V8 CPU profile of the Worker under workerd for `npm run bench --
 * --cpu-prof DIR`: records through the inspector of wrangler's local runtime
 * (Chrome DevTools Protocol over a WebSocket:
 * https://chromedevtools.github.io/devtools-protocol/tot/Profiler/) while a
 * scenario runs, and writes `worker-<scenario>.cpuprofile` with the bundle
 * wrangler ran beside it (`worker-bundle.js` and its source map), which
 * `npm run profile:summary` maps frames through. The inspector receives
 * every `console.log` call, so the request line weighs more in such a
 * profile than in an unprofiled run.
 */
import { copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, where wrangler keeps `.wrangler/` (not imported from sqld.ts: profile:summary imports this module). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The file name profile:summary looks for beside a Worker profile. */
export const WORKER_BUNDLE = "worker-bundle.js";

/** Where wrangler writes the bundle of a `wrangler dev` session (its temporary folder, `dev-*`). */
function latestDevBundle(): string {
  const tmp = join(ROOT, ".wrangler", "tmp");
  const dirs = readdirSync(tmp)
    .filter((d) => d.startsWith("dev-"))
    .map((d) => join(tmp, d))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!dirs[0]) throw new Error(`no wrangler dev bundle under ${tmp}`);
  return join(dirs[0], "worker.js");
}

/**
 * Start recording the Worker whose inspector listens on `inspectorPort`
 * (sampling every `intervalUs` µs). Resolves with `stop(dir, name)`, which
 * ends the recording and writes the profile and the bundle into `dir`.
 */
export async function startWorkerProfile(inspectorPort: number, intervalUs = 100): Promise<{ stop(dir: string, name: string): Promise<string> }> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  const target = targets.at(-1);
  if (!target) throw new Error(`no inspector target on port ${inspectorPort}`);
  // wrangler's inspector proxy admits local origins only; Node's WebSocket (undici) sends none unless given one.
  const init = { headers: { Origin: "http://127.0.0.1" } } as unknown as string[];
  const socket = new WebSocket(target.webSocketDebuggerUrl, init);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let lastId = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const send = <T>(method: string, params: object = {}) =>
    new Promise<T>((resolve) => {
      const id = ++lastId;
      pending.set(id, resolve as (result: unknown) => void);
      socket.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: intervalUs });
  await send("Profiler.start");
  return {
    async stop(dir, name) {
      const { profile } = await send<{ profile: unknown }>("Profiler.stop");
      socket.close();
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "")}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      const bundle = latestDevBundle();
      copyFileSync(bundle, join(dir, WORKER_BUNDLE));
      copyFileSync(`${bundle}.map`, join(dir, `${WORKER_BUNDLE}.map`));
      return file;
    },
  };
}
