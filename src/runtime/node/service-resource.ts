/** Node: the OpenTelemetry resource every process of the service describes itself with (`target_info`; docs/operations.md#metrics). */
import { readFileSync } from "node:fs";

/** The `version` of the nearest package.json above this module (the source's or the bundle's), for `service.version`. */
function packageVersion(): string | undefined {
  for (let dir = new URL(".", import.meta.url); dir.pathname !== "/"; dir = new URL("..", dir)) {
    try {
      return (JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as { version?: string }).version;
    } catch {}
  }
  return undefined;
}

/** The SDK's defaults with `service.name` (`petstore`) and `service.version` (package.json): what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override. */
export async function serviceResource() {
  const { defaultResource, resourceFromAttributes } = await import("@opentelemetry/resources");
  return defaultResource().merge(resourceFromAttributes({ "service.name": "petstore", "service.version": packageVersion() }));
}

/** The cluster primary's resource, as the server processes' SDK builds theirs: the service's, then what the OTEL_* variables, the host and the process say. */
export async function primaryResource() {
  const [service, { detectResources, envDetector, hostDetector, processDetector }] = await Promise.all([serviceResource(), import("@opentelemetry/resources")]);
  return service.merge(detectResources({ detectors: [envDetector, hostDetector, processDetector] }));
}
