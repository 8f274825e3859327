/** Router of /store/orders. */
import { createRouter } from "../../http/router";
import * as handlers from "./orders.handlers";
import * as routes from "./orders.routes";

export const ordersRouter = createRouter()
  .openapi(routes.list, handlers.list)
  .openapi(routes.create, handlers.create)
  .openapi(routes.get, handlers.get)
  .openapi(routes.patch, handlers.patch)
  .openapi(routes.remove, handlers.remove);
