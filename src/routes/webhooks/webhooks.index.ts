/** Router of /webhooks. */
import { createRouter } from "../../http/router";
import * as handlers from "./webhooks.handlers";
import * as routes from "./webhooks.routes";

export const webhooksRouter = createRouter()
  .openapi(routes.create, handlers.create)
  .openapi(routes.list, handlers.list)
  .openapi(routes.get, handlers.get)
  .openapi(routes.remove, handlers.remove)
  .openapi(routes.deliveries, handlers.deliveries)
  .openapi(routes.update, handlers.update)
  .openapi(routes.rotate, handlers.rotate)
  .openapi(routes.resend, handlers.resend)
  .openapi(routes.recover, handlers.recover)
  .openapi(routes.test, handlers.test);
