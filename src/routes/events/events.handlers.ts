/** Handlers of /events. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/context";
import { ApiError } from "../../http/errors";
import { DEFAULT_PAGE_SIZE, setNextLink } from "../../http/pagination";
import * as service from "../../services/events.service";
import { cursorExpired } from "../../services/retention";
import type * as routes from "./events.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { after = 0, limit = DEFAULT_PAGE_SIZE } = c.req.valid("query");
  const rows = await service.listEvents(c.get("db"), after, limit + 1);
  if (cursorExpired(after, rows[0]?.id)) {
    throw new ApiError(410, "cursor_expired", `Events after ${after} were deleted by retention; read again from after=0.`);
  }
  const events = rows.slice(0, limit);
  if (rows.length > limit) setNextLink(c, "after", String(events[events.length - 1]!.id));
  return c.json(events, 200);
};
