// @demo/web: entry point
import { Button, Card } from "@demo/ui";
import { formatPrice } from "@demo/utils";

export function render() {
  return Card("Demo mug", `Only ${formatPrice(1299)}`) + Button("Add to cart");
}
