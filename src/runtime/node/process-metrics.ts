/** Node process and runtime health, named by the OpenTelemetry process, V8 and Node.js conventions; cumulative or current values only (no scrape resets). */
import { readdirSync } from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver, performance } from "node:perf_hooks";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import type { Meter, Observable } from "@opentelemetry/api";
import { create, INSTRUMENTS } from "../../telemetry/instruments";

const GC_TYPES: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};

/** Open file descriptors (Linux: /proc/self/fd), undefined where that cannot be read. */
function openFiles(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return undefined;
  }
}

/**
 * Observe the process on `meter`: CPU seconds by mode, uptime and start time, RSS, open files, V8 heap used and limit by space and the heap cap, GC
 * pauses, event-loop time by state, and event-loop delay as a histogram of each second's worst delay.
 * @returns a function that stops the observers.
 */
export function observeProcess(meter: Meter): () => void {
  const keys = ["cpu", "uptime", "startTime", "rss", "files", "heapUsed", "heapLimit", "heapCap", "loopTime"] as const;
  const o = Object.fromEntries(keys.map((key) => [key, create(meter, INSTRUMENTS[key])])) as Record<(typeof keys)[number], Observable>;
  meter.addBatchObservableCallback((result) => {
    const { user, system } = process.cpuUsage();
    result.observe(o.cpu, user / 1e6, { "cpu.mode": "user" });
    result.observe(o.cpu, system / 1e6, { "cpu.mode": "system" });
    result.observe(o.uptime, process.uptime());
    result.observe(o.startTime, performance.timeOrigin / 1000);
    result.observe(o.rss, process.memoryUsage.rss());
    const open = openFiles();
    if (open !== undefined) result.observe(o.files, open);
    for (const space of getHeapSpaceStatistics()) {
      result.observe(o.heapUsed, space.space_used_size, { "v8js.heap.space.name": space.space_name });
      result.observe(o.heapLimit, space.space_size, { "v8js.heap.space.name": space.space_name });
    }
    result.observe(o.heapCap, getHeapStatistics().heap_size_limit);
    const { active, idle } = performance.eventLoopUtilization();
    result.observe(o.loopTime, active / 1000, { "nodejs.eventloop.state": "active" });
    result.observe(o.loopTime, idle / 1000, { "nodejs.eventloop.state": "idle" });
  }, Object.values(o));

  const gc = create(meter, INSTRUMENTS.gc);
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gc.record(entry.duration / 1000, { "v8js.gc.type": GC_TYPES[kind] ?? "other" });
    }
  });
  gcObserver.observe({ entryTypes: ["gc"] });

  const delay = create(meter, INSTRUMENTS.loopDelay);
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  monitor.enable();
  const window = setInterval(() => {
    delay.record(monitor.max / 1e9);
    monitor.reset();
  }, 1000).unref();
  return () => {
    clearInterval(window);
    monitor.disable();
    gcObserver.disconnect();
  };
}
