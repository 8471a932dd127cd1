// @demo/ui: Button
import { slugify } from "@demo/utils";

export function Button(label) {
  return `<button id="btn-${slugify(label)}">${label}</button>`;
}
