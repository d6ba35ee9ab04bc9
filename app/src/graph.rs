//! A graph drawn on the server: where its nodes go ([`layout`], a pure function) and the SVG
//! ([`GraphPicture`]). Labels are SVG text set as text (escaped like any text); colours come
//! from classes (the CSP allows no style attributes); every node links to its own page.

use std::collections::BTreeSet;

use leptos::prelude::*;

use crate::widgets::IntoRendered;

/// The picture's size in SVG units (it scales to the page's width).
pub const WIDTH: f64 = 1000.0;
pub const HEIGHT: f64 = 640.0;
/// Room left at the sides for labels, which are centred under their nodes.
const MARGIN_X: f64 = 70.0;
const MARGIN_Y: f64 = 30.0;
/// How much room a node and its label want: two nodes nearer than this (in each axis
/// together, as an ellipse) are pushed apart.
const ROOM_X: f64 = 96.0;
const ROOM_Y: f64 = 36.0;
const ITERATIONS: usize = 300;
/// Colours there are classes for (`kg-kind-0` …); more types share them.
const KINDS: usize = 8;

/// Where each node goes, in the `WIDTH` × `HEIGHT` box, the same for the same input.
///
/// `kinds[i]` is node `i`'s type: nodes start on a circle grouped by type (or, given
/// `rings`, each on the ring of its distance from node 0, which is pinned in the middle), then
/// a force-directed pass (Fruchterman–Reingold: nodes repel, relations pull) spreads them, and
/// a last pass pushes apart nodes whose labels would overlap.
pub fn layout(kinds: &[&str], edges: &[(usize, usize)], rings: Option<&[u32]>) -> Vec<(f64, f64)> {
    let n = kinds.len();
    if n == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![(WIDTH / 2.0, HEIGHT / 2.0)];
    }
    let pinned = rings.is_some();
    let mut p = start_positions(kinds, rings);
    // Fruchterman–Reingold in a box of side 2 around the origin.
    let k = 2.0 / (n as f64).sqrt();
    for step in 0..ITERATIONS {
        let heat = 0.2 * (1.0 - step as f64 / ITERATIONS as f64) + 0.002;
        let mut shift = vec![(0.0_f64, 0.0_f64); n];
        for i in 0..n {
            for j in (i + 1)..n {
                let (dx, dy) = (p[i].0 - p[j].0, p[i].1 - p[j].1);
                let d = dx.hypot(dy).max(1e-3);
                let push = k * k / d;
                shift[i].0 += dx / d * push;
                shift[i].1 += dy / d * push;
                shift[j].0 -= dx / d * push;
                shift[j].1 -= dy / d * push;
            }
        }
        for &(a, b) in edges.iter().filter(|(a, b)| a != b && *a < n && *b < n) {
            let (dx, dy) = (p[a].0 - p[b].0, p[a].1 - p[b].1);
            let d = dx.hypot(dy).max(1e-3);
            let pull = d * d / k;
            shift[a].0 -= dx / d * pull;
            shift[a].1 -= dy / d * pull;
            shift[b].0 += dx / d * pull;
            shift[b].1 += dy / d * pull;
        }
        for (i, s) in shift.iter_mut().enumerate() {
            // A little gravity keeps separate parts from drifting off.
            s.0 -= p[i].0 * k * 0.5;
            s.1 -= p[i].1 * k * 0.5;
        }
        for (i, (sx, sy)) in shift.into_iter().enumerate() {
            if pinned && i == 0 {
                continue;
            }
            let d = sx.hypot(sy);
            if d > 0.0 {
                let moved = d.min(heat);
                p[i].0 += sx / d * moved;
                p[i].1 += sy / d * moved;
            }
        }
    }
    let mut placed = fit(&p, pinned);
    spread(&mut placed, pinned);
    placed
}

/// Nodes on a circle, grouped by type; or on rings by distance, node 0 in the middle.
fn start_positions(kinds: &[&str], rings: Option<&[u32]>) -> Vec<(f64, f64)> {
    let n = kinds.len();
    let mut p = vec![(0.0, 0.0); n];
    let by_kind = |ids: &mut Vec<usize>| ids.sort_by(|a, b| kinds[*a].cmp(kinds[*b]).then(a.cmp(b)));
    match rings {
        Some(rings) => {
            let far = rings.iter().copied().max().unwrap_or(1).max(1);
            for ring in 1..=far {
                let mut ids: Vec<usize> = (1..n).filter(|i| rings.get(*i).copied().unwrap_or(far) == ring).collect();
                by_kind(&mut ids);
                let count = ids.len().max(1) as f64;
                for (place, id) in ids.into_iter().enumerate() {
                    let angle = std::f64::consts::TAU * place as f64 / count + f64::from(ring) * 0.5;
                    let radius = f64::from(ring) / f64::from(far);
                    p[id] = (radius * angle.cos(), radius * angle.sin());
                }
            }
        }
        None => {
            let mut ids: Vec<usize> = (0..n).collect();
            by_kind(&mut ids);
            for (place, id) in ids.into_iter().enumerate() {
                let angle = std::f64::consts::TAU * place as f64 / n as f64;
                p[id] = (angle.cos(), angle.sin());
            }
        }
    }
    p
}

/// The positions scaled into the box (each axis filled; with a pinned centre, it stays in
/// the middle).
fn fit(p: &[(f64, f64)], pinned: bool) -> Vec<(f64, f64)> {
    let (half_w, half_h) = (WIDTH / 2.0 - MARGIN_X, HEIGHT / 2.0 - MARGIN_Y);
    let (cx, cy) = if pinned {
        p[0]
    } else {
        let (min_x, max_x) = p.iter().fold((f64::MAX, f64::MIN), |(lo, hi), q| (lo.min(q.0), hi.max(q.0)));
        let (min_y, max_y) = p.iter().fold((f64::MAX, f64::MIN), |(lo, hi), q| (lo.min(q.1), hi.max(q.1)));
        ((min_x + max_x) / 2.0, (min_y + max_y) / 2.0)
    };
    let reach_x = p.iter().map(|q| (q.0 - cx).abs()).fold(0.0, f64::max).max(1e-9);
    let reach_y = p.iter().map(|q| (q.1 - cy).abs()).fold(0.0, f64::max).max(1e-9);
    p.iter()
        .map(|q| (WIDTH / 2.0 + (q.0 - cx) / reach_x * half_w, HEIGHT / 2.0 + (q.1 - cy) / reach_y * half_h))
        .collect()
}

/// Pushes apart, a little at a time, nodes whose labels would overlap, keeping every node in
/// the box (and a pinned centre where it is).
fn spread(p: &mut [(f64, f64)], pinned: bool) {
    let n = p.len();
    for _ in 0..200 {
        let mut moved = false;
        for i in 0..n {
            for j in (i + 1)..n {
                let (dx, dy) = ((p[j].0 - p[i].0) / ROOM_X, (p[j].1 - p[i].1) / ROOM_Y);
                let d = dx.hypot(dy);
                if d >= 1.0 {
                    continue;
                }
                moved = true;
                // Nodes on one spot part along a direction of their own.
                let (ux, uy) = if d < 1e-6 {
                    let angle = (i * 7 + j * 13) as f64;
                    (angle.cos(), angle.sin())
                } else {
                    (dx / d, dy / d)
                };
                let gap = (1.0 - d) / 2.0 + 0.01;
                let (mx, my) = (ux * gap * ROOM_X, uy * gap * ROOM_Y);
                let (fixed_i, fixed_j) = (pinned && i == 0, pinned && j == 0);
                let (share_i, share_j) = match (fixed_i, fixed_j) {
                    (true, _) => (0.0, 2.0),
                    (_, true) => (2.0, 0.0),
                    _ => (1.0, 1.0),
                };
                p[i].0 -= mx * share_i;
                p[i].1 -= my * share_i;
                p[j].0 += mx * share_j;
                p[j].1 += my * share_j;
            }
        }
        for q in p.iter_mut() {
            q.0 = q.0.clamp(MARGIN_X, WIDTH - MARGIN_X);
            q.1 = q.1.clamp(MARGIN_Y, HEIGHT - MARGIN_Y);
        }
        if !moved {
            break;
        }
    }
}

/// A node of a [`GraphPicture`]: its full name (the tooltip), its type, and its page.
pub struct PictureNode {
    pub name: String,
    pub kind: String,
    pub href: String,
}

/// A relation of a [`GraphPicture`], by node index.
pub struct PictureEdge {
    pub from: usize,
    pub to: usize,
    pub kind: String,
}

/// Edges are labelled in the picture only when there are this few (else in their tooltips).
const LABELLED_EDGES: usize = 24;
const RADIUS: f64 = 9.0;

/// A graph as server-drawn SVG, with a legend of its types. `rings` (the distance of each
/// node from node 0) draws a neighbourhood around node 0.
#[component]
pub fn GraphPicture(
    /// The picture's accessible name.
    title: String,
    nodes: Vec<PictureNode>,
    edges: Vec<PictureEdge>,
    #[prop(optional)] rings: Option<Vec<u32>>,
) -> impl IntoView {
    let kinds: BTreeSet<&str> = nodes.iter().map(|n| n.kind.as_str()).collect();
    let kinds: Vec<String> = kinds.into_iter().map(str::to_string).collect();
    let colour = |kind: &str| kinds.iter().position(|k| k == kind).unwrap_or(0) % KINDS;
    let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (e.from, e.to)).collect();
    let node_kinds: Vec<&str> = nodes.iter().map(|n| n.kind.as_str()).collect();
    let at = layout(&node_kinds, &pairs, rings.as_deref());
    let label_edges = edges.len() <= LABELLED_EDGES;
    let lines = edges
        .iter()
        .filter(|e| e.from < nodes.len() && e.to < nodes.len())
        .map(|e| {
            let tip = format!("{} → {}: {}", nodes[e.from].name, nodes[e.to].name, e.kind);
            let (a, b) = (at[e.from], at[e.to]);
            if e.from == e.to {
                return view! {
                    <g>
                        <circle cx=num(a.0 + RADIUS) cy=num(a.1 - RADIUS) r="8" class="kg-loop"><title>{tip}</title></circle>
                    </g>
                }
                .rendered();
            }
            let (dx, dy) = (b.0 - a.0, b.1 - a.1);
            let d = dx.hypot(dy).max(1e-6);
            let (ux, uy) = (dx / d, dy / d);
            let (x1, y1) = (a.0 + ux * RADIUS, a.1 + uy * RADIUS);
            let (x2, y2) = (b.0 - ux * (RADIUS + 2.0), b.1 - uy * (RADIUS + 2.0));
            let label = label_edges.then(|| {
                let text = kennel_kernel::text::shorten(&e.kind, 16);
                view! { <text x=num((a.0 + b.0) / 2.0) y=num((a.1 + b.1) / 2.0 - 3.0) text-anchor="middle" class="kg-edge-label">{text}</text> }
            });
            view! {
                <g>
                    <line x1=num(x1) y1=num(y1) x2=num(x2) y2=num(y2) class="kg-edge" marker-end="url(#kg-arrow)"><title>{tip}</title></line>
                    {label}
                </g>
            }
            .rendered()
        })
        .collect::<Vec<_>>();
    let centred = rings.is_some();
    let circles = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let (x, y) = at[i];
            let class =
                format!("kg-node kg-kind-{}{}", colour(&node.kind), if centred && i == 0 { " kg-centre" } else { "" });
            let r = if centred && i == 0 { RADIUS + 4.0 } else { RADIUS };
            let label = kennel_kernel::text::shorten(&node.name, 18);
            view! {
                <a href=node.href.clone()>
                    <title>{format!("{} ({})", node.name, node.kind)}</title>
                    <circle cx=num(x) cy=num(y) r=num(r) class=class></circle>
                    <text x=num(x) y=num(y + r + 13.0) text-anchor="middle" class="kg-label">{label}</text>
                </a>
            }
        })
        .collect::<Vec<_>>();
    let legend = kinds
        .iter()
        .enumerate()
        .map(
            |(i, kind)| view! { <li><span class=format!("kg-swatch kg-kind-{}", i % KINDS)></span>{kind.clone()}</li> },
        )
        .collect::<Vec<_>>();
    view! {
        <figure class="graph">
            <svg viewBox=format!("0 0 {WIDTH:.0} {HEIGHT:.0}") role="group" aria-label=title class="graph-svg">
                <defs>
                    <marker id="kg-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                        <path d="M 0 0 L 10 5 L 0 10 z" class="kg-arrowhead"></path>
                    </marker>
                </defs>
                <g class="kg-edges">{lines}</g>
                <g class="kg-nodes">{circles}</g>
            </svg>
            <ul class="kg-legend" aria-label="Entity types">{legend}</ul>
        </figure>
    }
}

fn num(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fifty nodes of four types: a ring with chords, and one loose node.
    fn fifty() -> (Vec<&'static str>, Vec<(usize, usize)>) {
        let kinds = (0..50).map(|i| ["project", "library", "person", "idea"][i % 4]).collect();
        let mut edges: Vec<(usize, usize)> = (0..49).map(|i| (i, (i + 1) % 49)).collect();
        edges.extend((0..49).step_by(3).map(|i| (i, (i * 7 + 5) % 49)));
        (kinds, edges)
    }

    fn inside(p: &[(f64, f64)]) -> bool {
        p.iter()
            .all(|&(x, y)| (MARGIN_X..=WIDTH - MARGIN_X).contains(&x) && (MARGIN_Y..=HEIGHT - MARGIN_Y).contains(&y))
    }

    /// The smallest gap between two nodes, in "label rooms" (1: their labels just touch).
    fn tightest(p: &[(f64, f64)]) -> f64 {
        let mut least = f64::MAX;
        for i in 0..p.len() {
            for j in (i + 1)..p.len() {
                least = least.min(((p[j].0 - p[i].0) / ROOM_X).hypot((p[j].1 - p[i].1) / ROOM_Y));
            }
        }
        least
    }

    #[test]
    fn fifty_nodes_fit_the_box_with_room_for_their_labels_the_same_every_time() {
        let (kinds, edges) = fifty();
        let placed = layout(&kinds, &edges, None);
        assert_eq!(placed.len(), 50);
        assert!(inside(&placed), "{placed:?}");
        assert!(tightest(&placed) > 0.9, "labels overlap: {}", tightest(&placed));
        assert_eq!(placed, layout(&kinds, &edges, None), "deterministic");
    }

    #[test]
    fn a_neighbourhood_keeps_its_centre_in_the_middle_and_rings_around_it() {
        let kinds = vec!["project"; 13];
        let rings: Vec<u32> = (0..13)
            .map(|i| {
                if i == 0 {
                    0
                } else if i <= 6 {
                    1
                } else {
                    2
                }
            })
            .collect();
        let edges: Vec<(usize, usize)> = (1..=6).map(|i| (0, i)).chain((7..13).map(|i| (i - 6, i))).collect();
        let placed = layout(&kinds, &edges, Some(&rings));
        assert_eq!(placed[0], (WIDTH / 2.0, HEIGHT / 2.0));
        assert!(inside(&placed) && tightest(&placed) > 0.9, "{placed:?}");
        let from_centre = |i: usize| ((placed[i].0 - WIDTH / 2.0) / WIDTH).hypot((placed[i].1 - HEIGHT / 2.0) / HEIGHT);
        let near = (1..=6).map(from_centre).fold(0.0, f64::max);
        let far = (7..13).map(from_centre).fold(f64::MAX, f64::min);
        assert!(near < far * 1.2, "distance 1 nearer than distance 2: {near} {far}");
    }

    #[test]
    fn tiny_graphs_and_loops_do_not_break_it() {
        assert!(layout(&[], &[], None).is_empty());
        assert_eq!(layout(&["x"], &[(0, 0)], None), [(WIDTH / 2.0, HEIGHT / 2.0)]);
        let two = layout(&["a", "a"], &[(0, 1), (1, 0), (0, 0), (5, 9)], None);
        assert!(inside(&two) && tightest(&two) > 0.9, "{two:?}");
    }

    #[test]
    fn the_picture_holds_names_only_as_text_and_links_every_node() {
        let hostile = "</text><script>alert(1)</script>\"><svg onload=alert(2)>";
        let nodes = vec![
            PictureNode { name: hostile.into(), kind: hostile.into(), href: "/agents/x/knowledge?entity=a".into() },
            PictureNode { name: "b".into(), kind: "lib".into(), href: "/agents/x/knowledge?entity=b".into() },
        ];
        let edges = vec![PictureEdge { from: 0, to: 1, kind: hostile.into() }];
        let html = view! { <GraphPicture title="t".to_string() nodes edges/> }.to_html();
        assert!(!html.contains("<script") && !html.contains("<svg onload"), "{html}");
        assert!(html.contains("&lt;/text&gt;&lt;script&gt;"), "{html}");
        assert_eq!(html.matches("<a href=\"/agents/x/knowledge?entity=").count(), 2, "{html}");
        assert!(!html.contains("style="), "{html}");
    }
}
