//! `--graph=FILE.html` (UI-13): one self-contained page — nothing fetched, one inline script —
//! with the plan drawn as SVG by a layered layout of vx's own, dependencies left of what needs
//! them (as the Graphviz drawing), a legend inside the SVG, click-to-focus, search, and the
//! tasks as a table.
//!
//! How the edges are drawn: every node sits in the column of its level and on a row; rows are
//! the same in every column, so between two rows runs a gap no box is in, and between two
//! columns a channel no box is in. An edge leaves its task's box leftwards into the channel on
//! its left, runs vertically there only, and reaches its dependency either straight through the
//! next channel (adjacent columns) or along the gap below the dependency's row across the
//! columns between (a lane), then vertically in the channel right of the dependency's column,
//! then into its box from the right. Vertical runs stay in channels and horizontal runs in gaps
//! or next to their own endpoints, so no edge passes through a box. Each edge gets its own
//! offset in a channel and in a gap, so that edges sharing one stay apart.
//!
//! A leaf: it knows the graph only as the [`Drawing`] it is handed.

use std::fmt::Write as _;

/// What the page draws.
pub struct Drawing {
    /// Per node: its id, its fill colour, and the word for what it is predicted to do.
    pub nodes: Vec<(String, &'static str, &'static str)>,
    /// Per node: its level (a dependency's is lower).
    pub levels: Vec<usize>,
    /// Per node: the nodes it depends on.
    pub deps: Vec<Vec<usize>>,
    /// The legend: (colour, word).
    pub legend: Vec<(&'static str, &'static str)>,
}

const ROW: usize = 36;
const BOX_H: usize = 24;
/// The width of a channel between two columns.
const GAP: usize = 90;
const CHAR_W: usize = 7;
/// Room above the graph for the legend.
const TOP: usize = 40;
const LEFT: usize = 10;

pub fn page(d: &Drawing) -> String {
    let n = d.nodes.len();
    let width_of = |i: usize| d.nodes[i].0.chars().count() * CHAR_W + 16;
    let columns = d.levels.iter().copied().max().map_or(0, |m| m + 1);
    let rows = ordered_columns(d, columns);
    let column_width: Vec<usize> = rows
        .iter()
        .map(|nodes| nodes.iter().map(|&i| width_of(i)).max().unwrap_or(0))
        .collect();
    let mut x_of = vec![0; columns];
    let mut x = LEFT;
    for c in 0..columns {
        x_of[c] = x;
        x += column_width[c] + GAP;
    }
    let mut at = vec![(0usize, 0usize, 0usize); n];
    for (c, nodes) in rows.iter().enumerate() {
        for (row, &i) in nodes.iter().enumerate() {
            at[i] = (c, row, TOP + row * ROW);
        }
    }
    let height = TOP + rows.iter().map(Vec::len).max().unwrap_or(0) * ROW + 10;
    let width = x.max(LEFT + legend_width(d) + 20);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"monospace\" font-size=\"12\">\n\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>\n"
    );
    svg.push_str(&legend(d));
    let mut k = 0usize;
    for (a, deps) in d.deps.iter().enumerate() {
        for &b in deps {
            let path = route(&at, &x_of, a, b, width_of(b), k);
            k += 1;
            let _ = writeln!(
                svg,
                "<path class=\"edge\" data-from=\"{a}\" data-to=\"{b}\" d=\"{path}\" fill=\"none\" stroke=\"#555\" marker-end=\"url(#arrow)\"/>"
            );
        }
    }
    for (i, (name, colour, word)) in d.nodes.iter().enumerate() {
        let (c, _, y) = at[i];
        let x = x_of[c];
        let name = escape(name);
        let _ = writeln!(
            svg,
            "<g class=\"node\" data-n=\"{i}\" data-id=\"{name}\"><title>{name}: {word}</title><rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{BOX_H}\" rx=\"4\" fill=\"{colour}\" stroke=\"#333\"/><text x=\"{}\" y=\"{}\">{name}</text></g>",
            width_of(i),
            x + 8,
            y + 16
        );
    }
    svg.push_str("</svg>\n");
    let mut table =
        String::from("<table><tr><th>task</th><th>predicted</th><th>depends on</th></tr>\n");
    for (i, (name, _, word)) in d.nodes.iter().enumerate() {
        let deps: Vec<String> = d.deps[i].iter().map(|&b| escape(&d.nodes[b].0)).collect();
        let _ = writeln!(
            table,
            "<tr><td>{}</td><td>{word}</td><td>{}</td></tr>",
            escape(name),
            deps.join(", ")
        );
    }
    table.push_str("</table>\n");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>vx plan</title>\n\
         <style>body{{font-family:system-ui,sans-serif;margin:1.5em}} \
         .graph{{overflow:auto;border:1px solid #ccc;padding:.5em;margin:1em 0}} table{{border-collapse:collapse}} \
         td,th{{border:1px solid #ddd;padding:.2em .6em;text-align:left;font-family:monospace}} \
         g.node{{cursor:pointer}} body.focus g.node:not(.lit),body.focus path.edge:not(.lit){{opacity:.12}} \
         body.searching g.node:not(.match){{opacity:.25}} g.node.match rect{{stroke:#c00;stroke-width:3}} \
         #search{{font:inherit;padding:.2em .4em;width:20em}}</style>\n</head>\n<body>\n\
         <h1>vx plan</h1>\n<p>{n} tasks · arrows point from a task to what it depends on · click a task to light what it \
         depends on and what depends on it, click the background to see all</p>\n\
         <p><input id=\"search\" type=\"search\" placeholder=\"search tasks\" autocomplete=\"off\"> <span id=\"found\"></span></p>\n\
         <div class=\"graph\">\n{svg}</div>\n{table}<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// The nodes of each column, top to bottom: the first column in node order, each next one by
/// the mean row of the dependencies a node has in the columns before (fewer crossings).
fn ordered_columns(d: &Drawing, columns: usize) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); columns];
    for (i, &l) in d.levels.iter().enumerate() {
        rows[l].push(i);
    }
    let mut row_of = vec![0usize; d.nodes.len()];
    for (c, column) in rows.iter_mut().enumerate() {
        if c > 0 {
            let key = |i: usize| {
                let deps = &d.deps[i];
                if deps.is_empty() {
                    return (usize::MAX, i);
                }
                let sum: usize = deps.iter().map(|&b| row_of[b]).sum();
                (sum * 1000 / deps.len(), i)
            };
            column.sort_by_key(|&i| key(i));
        }
        for (row, &i) in column.iter().enumerate() {
            row_of[i] = row;
        }
    }
    rows
}

/// The path of the edge from `a` to its dependency `b` (of width `b_width`), the `k`-th edge.
fn route(
    at: &[(usize, usize, usize)],
    x_of: &[usize],
    a: usize,
    b: usize,
    b_width: usize,
    k: usize,
) -> String {
    let (ca, _, ya) = at[a];
    let (cb, _, yb) = at[b];
    let (y1, y2) = (ya + BOX_H / 2, yb + BOX_H / 2);
    let x1 = x_of[ca];
    let x2 = x_of[cb] + b_width;
    // An offset inside a channel (8 to 80) and inside a gap (2 to 10 below a row's box).
    let channel = |c: usize, salt: usize| x_of[c] - GAP + 8 + ((k * 7 + salt) % 37) * 2;
    let lane = yb + BOX_H + 2 + (k % 5) * 2;
    // A dependency is always in a column to the left (its level is lower).
    if cb + 1 >= ca {
        let cx = channel(ca, 0);
        return format!("M{x1},{y1} H{cx} V{y2} H{x2}");
    }
    // Across the columns between: down (or up) in this task's channel to the lane under the
    // dependency's row, along it, then in the channel right of the dependency's column.
    let cxa = channel(ca, 0);
    let cxb = channel(cb + 1, 11);
    format!("M{x1},{y1} H{cxa} V{lane} H{cxb} V{y2} H{x2}")
}

fn legend_width(d: &Drawing) -> usize {
    d.legend
        .iter()
        .map(|(_, word)| 24 + word.chars().count() * CHAR_W + 16)
        .sum()
}

/// A row of swatches and words along the top of the SVG.
fn legend(d: &Drawing) -> String {
    let mut out = String::from("<g class=\"legend\">");
    let mut x = LEFT;
    for (colour, word) in &d.legend {
        let _ = write!(
            out,
            "<rect x=\"{x}\" y=\"8\" width=\"14\" height=\"14\" fill=\"{colour}\" stroke=\"#333\"/><text x=\"{}\" y=\"20\">{word}</text>",
            x + 20
        );
        x += 24 + word.chars().count() * CHAR_W + 16;
    }
    out.push_str("</g>\n");
    out
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Click-to-focus and search, inline: the page fetches nothing.
const SCRIPT: &str = r#"(function () {
  var nodes = Array.prototype.slice.call(document.querySelectorAll('g.node'));
  var edges = Array.prototype.slice.call(document.querySelectorAll('path.edge'));
  var deps = {}, dependants = {};
  edges.forEach(function (e) {
    var a = e.getAttribute('data-from'), b = e.getAttribute('data-to');
    (deps[a] = deps[a] || []).push(b);
    (dependants[b] = dependants[b] || []).push(a);
  });
  function reach(start, next) {
    var seen = {}, stack = [start];
    seen[start] = true;
    while (stack.length) {
      (next[stack.pop()] || []).forEach(function (m) {
        if (!seen[m]) { seen[m] = true; stack.push(m); }
      });
    }
    return seen;
  }
  function focus(n) {
    document.body.classList.toggle('focus', n !== null);
    if (n === null) {
      nodes.concat(edges).forEach(function (x) { x.classList.remove('lit'); });
      return;
    }
    var up = reach(n, deps), down = reach(n, dependants);
    nodes.forEach(function (g) {
      var i = g.getAttribute('data-n');
      g.classList.toggle('lit', !!(up[i] || down[i]));
    });
    edges.forEach(function (e) {
      var a = e.getAttribute('data-from'), b = e.getAttribute('data-to');
      e.classList.toggle('lit', !!((up[a] && up[b]) || (down[a] && down[b])));
    });
  }
  nodes.forEach(function (g) {
    g.addEventListener('click', function (ev) {
      ev.stopPropagation();
      focus(g.getAttribute('data-n'));
    });
  });
  document.querySelector('svg').addEventListener('click', function () { focus(null); });
  var search = document.getElementById('search'), found = document.getElementById('found');
  search.addEventListener('input', function () {
    var q = search.value.trim(), first = null, count = 0;
    document.body.classList.toggle('searching', q !== '');
    nodes.forEach(function (g) {
      var hit = q !== '' && g.getAttribute('data-id').indexOf(q) >= 0;
      g.classList.toggle('match', hit);
      if (hit) { count++; if (!first) first = g; }
    });
    found.textContent = q === '' ? '' : count + (count === 1 ? ' task' : ' tasks');
    if (first) first.scrollIntoView({ block: 'center', inline: 'center' });
  });
})();
"#;
