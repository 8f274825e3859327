/** Router of /store/inventory. */
import { createRouter } from "../../http/router";
import * as handlers from "./inventory.handlers";
import * as routes from "./inventory.routes";

export const inventoryRouter = createRouter().openapi(routes.list, handlers.list).openapi(routes.get, handlers.get).openapi(routes.replace, handlers.replace);
