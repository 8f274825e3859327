/** Router of /pets. */
import { createRouter } from "../../http/router";
import * as handlers from "./pets.handlers";
import * as routes from "./pets.routes";

export const petsRouter = createRouter()
  .openapi(routes.list, handlers.list)
  .openapi(routes.create, handlers.create)
  .openapi(routes.get, handlers.get)
  .openapi(routes.replace, handlers.replace)
  .openapi(routes.patch, handlers.patch)
  .openapi(routes.remove, handlers.remove);
