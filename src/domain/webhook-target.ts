/** What a webhook target URL must be: the rules of `POST /webhooks` `url` (docs/webhooks.md#targets). */
import { isPrivateHost } from "./private-address";

/** The authority of `raw` as written (RFC 3986 §3.2), or undefined without `//`; read after the clean-up the WHATWG URL parser does, as `URL` sees it. */
function writtenAuthority(raw: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the C0 controls are what the WHATWG URL parser strips.
  const text = raw.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
  return /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(text)?.[1];
}

/** Why `raw` cannot be a webhook target (none: undefined): absolute http(s), ≤ 2000 characters, a host (RFC 3986 §3.2.2), no credentials, no port 0, not private unless `allowPrivate`. */
export function webhookTargetProblem(raw: string, options: { allowPrivate: boolean }): string | undefined {
  const url = URL.parse(raw);
  if (!url) return "Must be an absolute http(s) URL.";
  if (url.protocol !== "http:" && url.protocol !== "https:") return "Only http and https URLs are allowed.";
  // WHATWG URL reads `http:///x` (and `http:x`) as `http://x/`: the host must be in the text sent, not made up of the path.
  if (!writtenAuthority(raw)) return "The URL must name a host.";
  if (url.username || url.password) return "Credentials in the URL are not allowed.";
  if (url.href.length > 2000) return "At most 2000 characters.";
  if (url.port === "0") return "Port 0 is not allowed.";
  if (!options.allowPrivate && isPrivateHost(url.hostname)) return "Loopback, private and link-local targets are not allowed.";
  return undefined;
}
