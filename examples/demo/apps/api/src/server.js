// @demo/api: server
import { slugify } from "@demo/utils";

export function listen(port = 3000) {
  return `api listening on :${port} with ${routes.length} routes (${slugify("Demo API")})`;
}
