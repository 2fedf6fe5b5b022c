// The dashboard: one self-contained page (no CDN, no external file: the machine running an
// evaluation may have no internet). It polls /dashboard/state once a second while it is visible
// and /v1/trajectories/{id} for the chosen trajectory's timeline; nobody watching costs nothing.
#include "frontend/observe.h"

namespace toolbridge::frontend {

namespace {

constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>toolbridge</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  :root { --fg:#1d232b; --muted:#6a7380; --line:#e3e7ec; --ok:#2f9e5b; --warn:#d98e04;
          --bad:#d1453b; --queue:#a9c7ee; --exec:#2f6fc2; --bg:#f7f9fb; }
  body { font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg);
         margin: 0; padding: 16px 24px; }
  h1 { font-size: 18px; margin: 0 0 12px; }
  h1 small { color: var(--muted); font-weight: normal; margin-left: 8px; }
  h2 { font-size: 15px; margin: 20px 0 8px; }
  .tiles { display: flex; flex-wrap: wrap; gap: 10px; }
  .tile { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
          min-width: 110px; }
  .tile .v { font-size: 20px; font-variant-numeric: tabular-nums; }
  .tile .k { color: var(--muted); font-size: 12px; }
  .charts { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 10px; }
  .chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
  .chart .k { color: var(--muted); font-size: 12px; }
  table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
  th, td { padding: 4px 10px; text-align: left; border-bottom: 1px solid var(--line);
           font-variant-numeric: tabular-nums; }
  th { color: var(--muted); font-weight: 600; font-size: 12px; }
  .state-ready { color: var(--ok); } .state-backoff, .state-failed { color: var(--bad); }
  .state-starting { color: var(--warn); }
  a { color: var(--exec); cursor: pointer; }
  #timeline { background: #fff; border: 1px solid var(--line); border-radius: 6px; }
  .legend span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
  #error { color: var(--bad); }
</style>
</head>
<body>
<h1>toolbridge <small id="status">connecting…</small> <small id="error"></small></h1>
<div class="tiles" id="tiles"></div>
<div class="charts">
  <div class="chart"><div class="k">calls/s</div><svg id="rate" width="360" height="80"></svg></div>
  <div class="chart"><div class="k">latency p50 (blue) / p99 (red), ms</div>
    <svg id="latency" width="360" height="80"></svg></div>
</div>
<h2>Servers</h2>
<table id="servers"><thead><tr><th>server</th><th>state</th><th>instances
  (starting/idle/busy/retiring)</th><th>in flight</th><th>queued</th><th>restarts</th>
  <th>breaker</th><th>calls/s</th><th>p50 ms</th><th>p99 ms</th><th>errors</th></tr></thead>
  <tbody></tbody></table>
<h2>Slowest calls in flight</h2>
<table id="slowest"><thead><tr><th>trajectory</th><th>server</th><th>tool</th>
  <th>running s</th></tr></thead><tbody></tbody></table>
<h2>Trajectory timeline <small id="chosen"></small></h2>
<div>
  <select id="pick"><option value="">choose a trajectory…</option></select>
  <span class="legend"><span style="background:var(--queue)"></span>queue
    <span style="background:var(--exec)"></span>execution
    <span style="background:var(--bad)"></span>error</span>
</div>
<svg id="timeline" width="960" height="40"></svg>
<script>
"use strict";
const history = { rate: [], p50: [], p99: [] };
const kHistory = 120;
let chosen = "";
const $ = (id) => document.getElementById(id);
const fmt = (x, d = 3) => (x === undefined || x === null) ? "–" : Number(x).toFixed(d);
const ms = (s) => (s === undefined || s === null) ? "–" : (1000 * s).toFixed(1);
const esc = (s) => String(s).replace(/[&<>"']/g,
  (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

function tile(k, v) {
  return `<div class="tile"><div class="v">${esc(v)}</div><div class="k">${esc(k)}</div></div>`;
}

function spark(svg, series) {
  const w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
  let max = 0;
  for (const s of series) for (const v of s.values) max = Math.max(max, v);
  if (max <= 0) max = 1;
  let out = "";
  for (const s of series) {
    const pts = s.values.map((v, i) =>
      `${(i * w / (kHistory - 1)).toFixed(1)},${(h - 4 - v / max * (h - 12)).toFixed(1)}`);
    out += `<polyline fill="none" stroke="${s.color}" stroke-width="1.5" points="${pts.join(" ")}"/>`;
  }
  out += `<text x="${w - 4}" y="10" text-anchor="end" font-size="10" fill="#6a7380">${fmt(max, 3)}</text>`;
  svg.innerHTML = out;
}

function push(name, v) {
  history[name].push(v);
  if (history[name].length > kHistory) history[name].shift();
}

function render(state) {
  const h = state.health, c = state.calls, t = state.totals;
  $("status").textContent = h.status;
  let queued = 0;
  const adm = (h.admission && h.admission.servers) || {};
  for (const s of Object.values(adm)) queued += s.queued || 0;
  const errors = Object.entries(c.all.outcomes).filter(([k]) => k !== "ok")
    .reduce((a, [, n]) => a + n, 0);
  const cacheTotal = t.cache_hits + t.cache_misses;
  $("tiles").innerHTML =
    tile("calls/s (10 s)", fmt(c.all.calls_per_s, 1)) +
    tile("p50 ms", ms(c.all.p50_s)) + tile("p99 ms", ms(c.all.p99_s)) +
    tile("errors (10 s)", errors) + tile("in flight", c.in_flight) +
    tile("queued", queued) + tile("trajectories", c.trajectories) +
    tile("calls (all)", t.calls) + tile("repairs", t.repairs) +
    tile("cache hit rate", cacheTotal ? fmt(100 * t.cache_hits / cacheTotal, 1) + " %" : "–") +
    (state.trace ? tile("trace dropped", state.trace.dropped) : "");
  push("rate", c.all.calls_per_s); push("p50", 1000 * c.all.p50_s); push("p99", 1000 * c.all.p99_s);
  spark($("rate"), [{ values: history.rate, color: "#2f6fc2" }]);
  spark($("latency"), [{ values: history.p50, color: "#2f6fc2" },
                       { values: history.p99, color: "#d1453b" }]);
  let rows = "";
  for (const [name, s] of Object.entries(h.servers)) {
    const f = c.servers[name] || { calls_per_s: 0, outcomes: {} };
    const errs = Object.entries(f.outcomes || {}).filter(([k]) => k !== "ok")
      .reduce((a, [, n]) => a + n, 0);
    const i = s.instances;
    rows += `<tr><td>${esc(name)}</td><td class="state-${esc(s.state)}">${esc(s.state)}</td>` +
      `<td>${i.starting}/${i.idle}/${i.busy}/${i.retiring}</td><td>${s.in_flight}</td>` +
      `<td>${(adm[name] && adm[name].queued) || 0}</td><td>${s.restarts}</td>` +
      `<td>${esc(s.breaker)}</td><td>${fmt(f.calls_per_s, 1)}</td><td>${ms(f.p50_s)}</td>` +
      `<td>${ms(f.p99_s)}</td><td>${errs}</td></tr>`;
  }
  $("servers").tBodies[0].innerHTML = rows;
  $("slowest").tBodies[0].innerHTML = c.slowest_active.map((a) =>
    `<tr><td><a data-t="${esc(a.trajectory)}">${esc(a.trajectory)}</a></td>` +
    `<td>${esc(a.server)}</td><td>${esc(a.tool)}</td><td>${fmt(a.running_s, 1)}</td></tr>`).join("");
}

async function refreshList() {
  const r = await fetch("/v1/trajectories", { cache: "no-store" });
  if (!r.ok) return;
  const list = await r.json();
  const pick = $("pick");
  const names = list.trajectories.map((t) => t.trajectory);
  if (!chosen && names.length) choose(names[0]);
  const opts = ['<option value="">choose a trajectory…</option>'].concat(names.map((n) =>
    `<option value="${esc(n)}"${n === chosen ? " selected" : ""}>${esc(n)}</option>`));
  pick.innerHTML = opts.join("");
}

function choose(name) {
  chosen = name;
  $("chosen").textContent = name ? "— " + name : "";
}

async function refreshTimeline() {
  const svg = $("timeline");
  if (!chosen) { svg.innerHTML = ""; return; }
  const r = await fetch("/v1/trajectories/" + encodeURIComponent(chosen), { cache: "no-store" });
  if (!r.ok) { svg.innerHTML = ""; return; }
  const tr = await r.json();
  const calls = tr.calls;
  const rowH = 16, left = 170, width = +svg.getAttribute("width") - left - 10;
  svg.setAttribute("height", Math.max(40, calls.length * rowH + 24));
  if (!calls.length) { svg.innerHTML = ""; return; }
  const t0 = Math.min(...calls.map((x) => x.time_ms));
  const t1 = Math.max(...calls.map((x) => x.time_ms + x.total_s * 1000));
  const span = Math.max(1, t1 - t0);
  const x = (ms) => left + (ms - t0) / span * width;
  let out = `<text x="${left}" y="12" font-size="10" fill="#6a7380">0 s</text>` +
    `<text x="${left + width}" y="12" font-size="10" text-anchor="end" fill="#6a7380">` +
    `${fmt(span / 1000, 2)} s</text>`;
  calls.forEach((c, i) => {
    const y = 18 + i * rowH, start = c.time_ms, qEnd = start + c.queue_s * 1000;
    const end = start + c.total_s * 1000, bad = c.outcome !== "ok";
    out += `<g data-seq="${c.seq}" class="call"><title>${esc(c.tool)}: ${esc(c.outcome)}, ` +
      `queue ${fmt(c.queue_s)} s, execution ${fmt(c.execution_s)} s</title>` +
      `<text x="4" y="${y + 11}" font-size="11">${esc(c.tool).slice(0, 26)}</text>` +
      `<rect x="${x(start)}" y="${y + 2}" width="${Math.max(1, x(qEnd) - x(start))}" ` +
      `height="11" fill="var(--queue)"/>` +
      `<rect x="${x(qEnd)}" y="${y + 2}" width="${Math.max(1, x(end) - x(qEnd))}" ` +
      `height="11" fill="${bad ? "var(--bad)" : "var(--exec)"}"/></g>`;
  });
  svg.innerHTML = out;
}

let tick = 0;
async function poll() {
  if (document.hidden) return;
  try {
    const r = await fetch("/dashboard/state", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    if (tick++ % 5 === 0) await refreshList();
    await refreshTimeline();
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = "cannot reach the gateway: " + e.message;
  }
}

$("pick").addEventListener("change", (e) => { choose(e.target.value); refreshTimeline(); });
document.addEventListener("click", (e) => {
  const t = e.target.closest("a[data-t]");
  if (t) { choose(t.dataset.t); refreshList(); refreshTimeline(); }
});
poll();
setInterval(poll, 1000);
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view dashboard_page() { return kPage; }

}  // namespace toolbridge::frontend
