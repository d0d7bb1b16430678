/// The dev page: one HTML document with its style and script. The script
/// listens to `/events` and draws each snapshot; its buttons post to
/// `/tap` and `/clock`. Elements tests look for carry `data-test`.
enum DevPageHTML {
    static let page = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lunette dev</title>
<style>
  :root { --ink: #1d1d1f; --muted: #6e6e73; --line: #d2d2d7; --bg: #f5f5f7; --ok: #1a7f37; --bad: #c9342c; --accent: #0a66c2; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
  header { display: flex; flex-wrap: wrap; gap: 12px 24px; align-items: center; padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); position: sticky; top: 0; }
  header h1 { font-size: 16px; margin: 0; }
  .pill { padding: 2px 8px; border-radius: 10px; background: var(--bg); font-family: ui-monospace, monospace; font-size: 12px; }
  .live { color: var(--ok); } .stale { color: var(--bad); }
  main { padding: 16px 20px; display: grid; gap: 16px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 12px 16px; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 8px; }
  .error { border-color: var(--bad); background: #fff5f5; }
  .error pre { white-space: pre-wrap; margin: 4px 0; font-size: 12px; }
  .widgets { display: grid; gap: 12px; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); }
  .widget h3 { margin: 0 0 4px; font-size: 14px; }
  .meta { color: var(--muted); font-size: 12px; }
  table { border-collapse: collapse; width: 100%; margin-top: 6px; font-size: 12px; }
  td, th { text-align: left; vertical-align: top; padding: 3px 6px; border-top: 1px solid var(--line); }
  td.content { font-family: ui-monospace, monospace; word-break: break-word; }
  tr.shown { background: #eef6ff; font-weight: 600; }
  button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
  button:hover { border-color: var(--accent); }
  .logs { font-family: ui-monospace, monospace; font-size: 12px; max-height: 240px; overflow: auto; }
  .empty { color: var(--muted); }
</style>
</head>
<body>
<header>
  <h1>lunette dev <span data-test="bundle" class="pill"></span></h1>
  <span>version <span data-test="version" class="pill">—</span></span>
  <span data-test="status" class="stale">connecting…</span>
  <span>now <span data-test="now" class="pill"></span> <span data-test="ahead" class="meta"></span></span>
  <span>
    <button data-test="step-5m" onclick="step('by=300')">+5 min</button>
    <button data-test="step-1h" onclick="step('by=3600')">+1 h</button>
    <button data-test="step-next" onclick="step('next=1')">next reload</button>
  </span>
</header>
<main>
  <section data-test="error" class="error" hidden><h2>Not swapped in — the last good version goes on running</h2><div data-test="error-text"></div></section>
  <div class="widgets" data-test="widgets"></div>
  <section><h2>Controls</h2><div data-test="controls"></div></section>
  <section><h2>Live Activities</h2><div data-test="activities"></div></section>
  <section><h2>Recent logs</h2><div class="logs" data-test="logs"></div></section>
</main>
<script>
"use strict";
const $ = (test) => document.querySelector(`[data-test="${test}"]`);
const time = (t) => t == null ? "—" : new Date(t * 1000).toISOString().replace(".000Z", "Z");
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const show = (v) => esc(JSON.stringify(v));
let received = 0;

function render(s) {
  received += 1;
  document.body.dataset.generation = String(received);
  $("bundle").textContent = s.bundle || s.path;
  $("version").textContent = s.version || "none yet";
  $("now").textContent = time(s.now);
  $("ahead").textContent = s.ahead > 0 ? `(+${Math.round(s.ahead)} s ahead)` : "";
  const err = $("error");
  err.hidden = !s.failure;
  $("error-text").innerHTML = (s.failure || []).map((p) =>
    `<pre data-test="problem" data-line="${p.line ?? ""}">${esc(p.text)}</pre>`).join("");
  $("widgets").innerHTML = s.widgets.map((w) => `
    <section class="widget" data-test="widget" data-id="${w.id}">
      <h3>${esc(w.name)}</h3>
      <div class="meta">policy ${esc(w.policy ?? "—")} · last reload ${time(w.lastReload)} · next ${time(w.nextReload)}
        · without developer mode: ${w.wouldHaveUsed} of ${w.budget} reloads in 24 h</div>
      ${w.failure ? `<pre class="error" data-test="widget-error">${esc(w.failure.text)}</pre>` : ""}
      <table><tr><th>from</th><th>entry</th></tr>
      ${w.entries.map((e, i) => `<tr class="${i === w.shown ? "shown" : ""}" data-test="${i === w.shown ? "shown-entry" : "entry"}">
        <td>${time(e.date)}</td><td class="content">${show(e.content)}</td></tr>`).join("")
        || `<tr><td colspan="2" class="empty">no timeline yet (placeholder: ${show(w.placeholder)})</td></tr>`}
      </table>
    </section>`).join("") || `<section class="empty">No widgets.</section>`;
  $("controls").innerHTML = s.controls.map((c) => `
    <div data-test="control" data-kind="${esc(c.kind)}">${esc(c.kind)} (${esc(c.type)}): <b data-test="control-value">${show(c.value ?? null)}</b>
      <button data-tap="${esc(c.kind)}">tap</button>
      ${c.failure ? `<pre class="error">${esc(c.failure.text)}</pre>` : ""}</div>`).join("") || `<span class="empty">No controls.</span>`;
  $("activities").innerHTML = s.activities.map((a) => `
    <div data-test="activity">${esc(a.id)} · ${esc(a.type)} · <b>${esc(a.phase)}</b> · state ${show(a.state)} · attributes ${show(a.attributes)}
      ${a.staleDate ? ` · stale at ${time(a.staleDate)}` : ""}</div>`).join("") || `<span class="empty">No activities.</span>`;
  $("logs").innerHTML = s.logs.map((l) => `<div>${time(l.at)} ${esc(l.source)} ${esc(l.level)}: ${esc(l.text)}</div>`).join("")
    || `<span class="empty">No log lines.</span>`;
}

async function post(url) {
  const answer = await fetch(url, { method: "POST" });
  if (!answer.ok) alert(await answer.text());
}
const tap = (kind) => post(`/tap?kind=${encodeURIComponent(kind)}`);
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-tap]");
  if (button) tap(button.dataset.tap);
});
const step = (query) => post(`/clock?${query}`);

function connect() {
  const events = new EventSource("/events");
  events.onopen = () => { $("status").textContent = "live"; $("status").className = "live"; };
  events.onmessage = (message) => render(JSON.parse(message.data));
  events.onerror = () => { $("status").textContent = "reconnecting…"; $("status").className = "stale"; };
}
connect();
</script>
</body>
</html>
"""#
}
