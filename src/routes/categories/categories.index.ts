/** Router of /categories. */
import { createRouter } from "../../http/router";
import * as handlers from "./categories.handlers";
import * as routes from "./categories.routes";

export const categoriesRouter = createRouter()
  .openapi(routes.list, handlers.list)
  .openapi(routes.create, handlers.create)
  .openapi(routes.get, handlers.get)
  .openapi(routes.patch, handlers.patch)
  .openapi(routes.remove, handlers.remove);
