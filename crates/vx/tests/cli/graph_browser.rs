//! `--graph=FILE.html` (UI-13) in a real browser: Debian's Chromium, driven headless by
//! playwright-core (both installed by scripts/test), on the page vx wrote for a generated
//! 200-project workspace. No edge passes through a task's box; clicking a task lights exactly
//! what it depends on and what depends on it; the search marks the matching tasks. Screenshots
//! go to the test's output folder (`target/tmp/graph-browser/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use vx_test_support::fixture::Fixture;

const PROJECTS: usize = 200;

/// The dependencies of project `i`: a tree of halves and thirds (about eight levels, so edges
/// from a third cross several columns) and every tenth project on the one before it.
fn deps_of(i: usize) -> Vec<usize> {
    let mut deps = BTreeSet::new();
    if i > 0 {
        deps.insert(i / 2);
    }
    if i > 2 {
        deps.insert(i / 3 + 1);
    }
    if i.is_multiple_of(10) && i > 0 {
        deps.insert(i - 1);
    }
    deps.into_iter().filter(|&d| d < i).collect()
}

fn workspace() -> Fixture {
    let f = crate::empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    for i in 0..PROJECTS {
        let deps: Vec<String> = deps_of(i)
            .iter()
            .map(|d| format!("\"p{d:03}\": \"1.0.0\""))
            .collect();
        f.write(
            &format!("packages/p{i:03}/package.json"),
            &format!(
                "{{ \"name\": \"p{i:03}\", \"version\": \"1.0.0\", \"dependencies\": {{ {} }} }}",
                deps.join(", ")
            ),
        );
        f.write(
            &format!("packages/p{i:03}/vx.toml"),
            "[tasks.build]\ncommand = \"true\"\ndepends-on = [\"^build\"]\n",
        );
    }
    f.commit();
    f
}

/// Chromium and the playwright-core module, or `None` (after saying the test is skipped) when
/// either is missing outside CI and scripts/test.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = PathBuf::from("/usr/bin/chromium");
    let module = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.test-tools/browser/node_modules/playwright-core");
    if chromium.exists() && module.exists() {
        return Some((chromium, module));
    }
    let why = "Chromium or playwright-core is missing: `apt-get install chromium` and \
               `npm install --prefix .test-tools/browser playwright-core` (scripts/test does both)";
    assert!(!vx_test_support::tools::tools_required(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// What the page shows, measured in the browser.
const SCRIPT: &str = r#"
const { chromium } = require(process.env.PW_MODULE);
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const requests = [];
  page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
  await page.goto('file://' + process.env.PAGE);
  await page.screenshot({ path: process.env.OUT + '/graph-200.png', fullPage: true });
  const geometry = await page.evaluate(() => {
    const boxes = Array.from(document.querySelectorAll('g.node rect')).map((r) => ({
      x: +r.getAttribute('x'), y: +r.getAttribute('y'),
      w: +r.getAttribute('width'), h: +r.getAttribute('height'),
      id: r.parentNode.getAttribute('data-id'),
    }));
    const through = [];
    const edges = Array.from(document.querySelectorAll('path.edge'));
    for (const e of edges) {
      const length = e.getTotalLength();
      for (let at = 0; at <= length; at += 1.5) {
        const p = e.getPointAtLength(at);
        for (const b of boxes) {
          if (p.x > b.x + 1 && p.x < b.x + b.w - 1 && p.y > b.y + 1 && p.y < b.y + b.h - 1) {
            through.push(b.id + ' by an edge of ' + e.getAttribute('data-from'));
            break;
          }
        }
        if (through.length > 20) break;
      }
    }
    return { boxes: boxes.length, edges: edges.length, through: through,
             legend: document.querySelectorAll('svg g.legend rect').length };
  });
  await page.click('g.node[data-id="' + process.env.FOCUS + '"]');
  const lit = await page.$$eval('g.node.lit', (gs) => gs.map((g) => g.getAttribute('data-id')).sort());
  const dimmed = await page.$eval('body', (b) => b.classList.contains('focus'));
  await page.screenshot({ path: process.env.OUT + '/graph-200-focus.png', fullPage: true });
  await page.mouse.click(5, 5);
  await page.click('svg', { position: { x: 3, y: 3 } });
  const after = await page.$$eval('g.node.lit', (gs) => gs.length);
  await page.fill('#search', 'p19');
  const matches = await page.$$eval('g.node.match', (gs) => gs.map((g) => g.getAttribute('data-id')).sort());
  const found = await page.textContent('#found');
  await page.screenshot({ path: process.env.OUT + '/graph-200-search.png' });
  console.log(JSON.stringify({ geometry, lit, dimmed, after, matches, found, requests }));
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
"#;

/// The ids of `from` and everything it depends on or that depends on it, transitively.
fn closure(from: usize) -> Vec<String> {
    let mut lit = BTreeSet::from([from]);
    let mut stack = vec![from];
    while let Some(i) = stack.pop() {
        for d in deps_of(i) {
            if lit.insert(d) {
                stack.push(d);
            }
        }
    }
    let mut stack = vec![from];
    let mut down = BTreeSet::from([from]);
    while let Some(i) = stack.pop() {
        for j in (i + 1)..PROJECTS {
            if deps_of(j).contains(&i) && down.insert(j) {
                stack.push(j);
            }
        }
    }
    lit.extend(down);
    lit.into_iter().map(|i| format!("p{i:03}#build")).collect()
}

#[test]
fn the_html_graph_of_200_projects_in_a_real_browser() {
    let Some((chromium, module)) = browser() else {
        return;
    };
    let f = workspace();
    let out = f.vx(&["run", "build", "--all", "--graph=graph.html"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let page = f.path("graph.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for link in ["src=", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(link), "the page links out: {link}");
    }
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("graph-browser");
    std::fs::create_dir_all(&folder).unwrap();
    let script = f.path("measure.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let focus = 100;
    let run = Command::new("node")
        .arg(&script)
        .env("PW_MODULE", &module)
        .env("CHROMIUM", &chromium)
        .env("PAGE", &page)
        .env("OUT", &folder)
        .env("FOCUS", format!("p{focus:03}#build"))
        .output()
        .expect("node runs");
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let seen: serde_json::Value =
        serde_json::from_slice(&run.stdout).expect("the page's measures as JSON");
    let geometry = &seen["geometry"];
    assert_eq!(geometry["boxes"], PROJECTS, "{seen}");
    let edges: usize = (0..PROJECTS).map(|i| deps_of(i).len()).sum();
    assert_eq!(geometry["edges"], edges, "{seen}");
    assert_eq!(
        geometry["through"],
        serde_json::json!([]),
        "no edge crosses a box"
    );
    assert_eq!(
        geometry["legend"], 6,
        "a swatch per prediction in the SVG: {seen}"
    );
    // Click-to-focus lights exactly the task's closure; the background clears it.
    let lit: Vec<String> = serde_json::from_value(seen["lit"].clone()).unwrap();
    assert_eq!(lit, closure(focus));
    assert!(lit.len() > 3 && lit.len() < PROJECTS, "{}", lit.len());
    assert_eq!(seen["dimmed"], true);
    assert_eq!(seen["after"], 0, "{seen}");
    let matches: Vec<String> = serde_json::from_value(seen["matches"].clone()).unwrap();
    let expected: Vec<String> = (0..PROJECTS)
        .map(|i| format!("p{i:03}#build"))
        .filter(|id| id.contains("p19"))
        .collect();
    assert_eq!(matches, expected);
    assert_eq!(seen["found"], format!("{} tasks", expected.len()));
    assert_eq!(
        seen["requests"],
        serde_json::json!([]),
        "the page fetched something"
    );
    for shot in [
        "graph-200.png",
        "graph-200-focus.png",
        "graph-200-search.png",
    ] {
        assert!(folder.join(shot).is_file(), "{shot}");
    }
}
