/** Router of /accounts. */
import { createRouter } from "../../http/router";
import * as handlers from "./accounts.handlers";
import * as routes from "./accounts.routes";

export const accountsRouter = createRouter()
  .openapi(routes.signUp, handlers.signUp)
  .openapi(routes.me, handlers.me)
  .openapi(routes.listKeys, handlers.listKeys)
  .openapi(routes.createKey, handlers.createKey)
  .openapi(routes.revokeKey, handlers.revokeKey);
