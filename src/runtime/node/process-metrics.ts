/**
 * Node process and runtime health as the OpenTelemetry process, V8 and Node.js conventions name them (docs/operations.md#metrics). Every
 * value is cumulative or current: no scrape resets anything, so two Prometheus servers see the same series.
 */
import { readdirSync } from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver, performance } from "node:perf_hooks";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import type { Meter } from "@opentelemetry/api";

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
 * Observe the process on `meter`: CPU seconds by mode, uptime, RSS, open files, V8 heap used and limit by space and the heap cap, GC
 * pauses, event-loop time by state, and event-loop delay as a histogram of each `windowMs`'s worst delay.
 * @returns a function that stops the observers.
 */
export function observeProcess(meter: Meter, windowMs = 1000): () => void {
  const cpu = meter.createObservableCounter("process.cpu.time", { unit: "s", description: "CPU seconds by mode (user, system)" });
  const uptime = meter.createObservableGauge("process.uptime", { unit: "s", description: "Seconds since the process started" });
  const rss = meter.createObservableGauge("process.memory.usage", { unit: "By", description: "Resident set size" });
  // The Prometheus clients' name: the conventions' `process.open_file_descriptor.count` would end in `_count`, which promtool refuses.
  const files = meter.createObservableGauge("process.open_fds", { description: "Open file descriptors" });
  const heapUsed = meter.createObservableGauge("v8js.memory.heap.used", { unit: "By", description: "V8 heap used, by space" });
  const heapLimit = meter.createObservableGauge("v8js.memory.heap.limit", { unit: "By", description: "V8 heap size, by space" });
  const heapCap = meter.createObservableGauge("v8js.memory.heap.max", { unit: "By", description: "The V8 heap's cap (--max-old-space-size)" });
  const loopTime = meter.createObservableCounter("nodejs.eventloop.time", { unit: "s", description: "Event-loop seconds by state (active, idle)" });
  meter.addBatchObservableCallback(
    (result) => {
      const { user, system } = process.cpuUsage();
      result.observe(cpu, user / 1e6, { "cpu.mode": "user" });
      result.observe(cpu, system / 1e6, { "cpu.mode": "system" });
      result.observe(uptime, process.uptime());
      result.observe(rss, process.memoryUsage.rss());
      const open = openFiles();
      if (open !== undefined) result.observe(files, open);
      for (const space of getHeapSpaceStatistics()) {
        result.observe(heapUsed, space.space_used_size, { "v8js.heap.space.name": space.space_name });
        result.observe(heapLimit, space.space_size, { "v8js.heap.space.name": space.space_name });
      }
      result.observe(heapCap, getHeapStatistics().heap_size_limit);
      const { active, idle } = performance.eventLoopUtilization();
      result.observe(loopTime, active / 1000, { "nodejs.eventloop.state": "active" });
      result.observe(loopTime, idle / 1000, { "nodejs.eventloop.state": "idle" });
    },
    [cpu, uptime, rss, files, heapUsed, heapLimit, heapCap, loopTime],
  );

  const gc = meter.createHistogram("v8js.gc.duration", {
    unit: "s",
    description: "GC pauses by type",
    advice: { explicitBucketBoundaries: [0.001, 0.01, 0.1, 1, 10] },
  });
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gc.record(entry.duration / 1000, { "v8js.gc.type": GC_TYPES[kind] ?? "other" });
    }
  });
  gcObserver.observe({ entryTypes: ["gc"] });

  const delay = meter.createHistogram("nodejs.eventloop.delay", {
    unit: "s",
    description: "Event-loop delay: the worst of each second",
    advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] },
  });
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  monitor.enable();
  const window = setInterval(() => {
    delay.record(monitor.max / 1e9);
    monitor.reset();
  }, windowMs).unref();
  return () => {
    clearInterval(window);
    monitor.disable();
    gcObserver.disconnect();
  };
}
