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

/** `service.name` (`petstore`) and `service.version` (package.json): the defaults that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override. */
export function serviceAttributes(): { "service.name": string; "service.version": string | undefined } {
  return { "service.name": "petstore", "service.version": packageVersion() };
}

/**
 * The cluster primary's resource, as the server processes' SDK builds theirs: the SDK's defaults, the service's attributes, then what
 * the OTEL_* variables, the host and the process say.
 */
export async function primaryResource() {
  const { defaultResource, detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes } = await import("@opentelemetry/resources");
  const detected = detectResources({ detectors: [envDetector, hostDetector, processDetector] });
  return defaultResource().merge(resourceFromAttributes(serviceAttributes())).merge(detected);
}
