// @demo/ui: Card
export function Card(title, body) {
  return `<section class="card"><h2>${title}</h2><p>${body}</p></section>`;
}
