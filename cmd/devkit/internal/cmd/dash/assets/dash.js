// devkit dash: renders the snapshots of /events and the lines of /logs.
// Untrusted text (log lines, identities) only ever goes into textContent.
"use strict";
const HISTORY = 300; // points kept per chart: 5 minutes at 1 s
const COLOURS = ["#59c2ff", "#f26d6d", "#e6b450", "#4ec97a", "#d2a6ff", "#95e6cb"];
// The charts' points survive a reload of the page (sessionStorage).
const history = (() => {
  try { return JSON.parse(sessionStorage.getItem("history")) || { denied: {}, kv: [] }; } catch { return { denied: {}, kv: [] }; }
})();
let selected = sessionStorage.getItem("selected") || "";
let logSource = null;

const $ = (id) => document.getElementById(id);
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function bytes(n) {
  if (!n) return "-";
  const u = "KMGTPE"; let i = -1;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return i < 0 ? n + "B" : n.toFixed(1) + u[i];
}
function rate(v) { return v >= 100 ? v.toFixed(0) : v.toFixed(1); }
function duration(s) {
  if (!s) return "-";
  s = Math.floor(s);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
}
function push(arr, v) { arr.push(v); if (arr.length > HISTORY) arr.shift(); }

function renderProcesses(ps) {
  const body = $("processes").tBodies[0];
  body.replaceChildren();
  for (const p of ps || []) {
    const tr = el("tr");
    tr.dataset.name = p.name;
    tr.dataset.state = p.state;
    tr.dataset.restarts = p.restarts;
    if (p.name === selected) tr.className = "selected";
    const cpu = p.cpu_percent === undefined ? "-" : p.cpu_percent.toFixed(1);
    const cells = [p.name, p.state, p.pid || "-", cpu, p.cpu_seconds ? p.cpu_seconds.toFixed(2) + "s" : "-", bytes(p.rss_bytes), p.restarts, duration(p.uptime_seconds)];
    cells.forEach((c, i) => tr.append(el("td", String(c), i === 1 ? "state state-" + p.state : undefined)));
    if (p.reason) tr.title = p.reason;
    tr.addEventListener("click", () => openLog(p.name));
    body.append(tr);
  }
  if (!selected && ps && ps.length) openLog(ps[0].name);
}

function polyline(svg, values, top, colour, label) {
  // The newest point is at the right edge; older ones scroll left.
  const step = 300 / (HISTORY - 1), n = values.length;
  const pts = values.map((v, i) => `${300 - (n - 1 - i) * step},${80 - (v / top) * 76 - 2}`).join(" ");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", pts);
  line.setAttribute("stroke", colour);
  line.dataset.label = label;
  line.dataset.last = values.length ? values[values.length - 1] : 0;
  line.dataset.max = Math.max(0, ...values);
  svg.append(line);
}

function renderGateway(g) {
  if (!g) { $("gw-summary").textContent = "not configured (--gateway URL)"; return; }
  $("gw-url").textContent = g.url;
  if (!g.up) { $("gw-summary").textContent = "down: " + g.error; $("gw-summary").className = "bad"; return; }
  let store = g.store_ok ? `store ${(g.store_latency_seconds * 1000).toFixed(1)} ms` : "store DOWN: " + g.store_error;
  for (const b of g.breakers || []) if (b.state !== "closed") store += ` · breaker ${b.node} ${b.state}`;
  $("gw-summary").className = g.store_ok ? "" : "bad";
  $("gw-summary").textContent = `${rate(g.decisions_per_second)} decisions/s · ${rate(g.denied_per_second)} denied/s · ${store}`;
  const body = $("rules").tBodies[0];
  body.replaceChildren();
  for (const r of g.rules || []) {
    push(history.denied[r.name] = history.denied[r.name] || [], r.denied_per_second);
    const tr = el("tr");
    tr.dataset.rule = r.name;
    [r.name, rate(r.decisions_per_second), rate(r.denied_per_second), r.allowed, r.denied].forEach((c) => tr.append(el("td", String(c))));
    body.append(tr);
  }
  const svg = $("chart-denied"), legend = $("legend-denied");
  svg.replaceChildren(); legend.replaceChildren();
  const names = Object.keys(history.denied).sort();
  const top = Math.max(1, ...names.flatMap((n) => history.denied[n]));
  names.forEach((n, i) => {
    const c = COLOURS[i % COLOURS.length];
    polyline(svg, history.denied[n], top, c, n);
    const s = el("span"); const sw = el("i"); sw.style.background = c; s.append(sw, n + " denied/s"); legend.append(s);
  });
  const top5 = (g.top_denied && g.top_denied.length ? g.top_denied.map((c) => `${c.key} (${c.denied} denied)`) : (g.top || []).map((c) => `${c.key} (${c.hits})`));
  $("gw-top").textContent = top5.length ? "top: " + top5.join(", ") : "";
}

function renderKV(kv) {
  if (!kv) { $("kv-summary").textContent = "not configured (--kv URL)"; return; }
  $("kv-url").textContent = kv.url;
  if (!kv.up) { $("kv-summary").textContent = "down: " + kv.error; $("kv-summary").className = "bad"; $("kv-stats").replaceChildren(); return; }
  $("kv-summary").className = kv.read_only ? "bad" : "";
  $("kv-summary").textContent = `${rate(kv.total_ops_per_second)} ops/s` + (kv.read_only ? " · READ-ONLY" : "");
  push(history.kv, kv.total_ops_per_second);
  const svg = $("chart-kv");
  svg.replaceChildren();
  polyline(svg, history.kv, Math.max(1, ...history.kv), COLOURS[0], "ops/s");
  const stats = [["p99", kv.p99_seconds === undefined ? "-" : (kv.p99_seconds * 1000).toFixed(2) + " ms"], ["keys", kv.keys], ["data", bytes(kv.data_bytes)],
    ["WAL", `${bytes(kv.wal_bytes)} in ${kv.wal_segments} segments`], ["fsyncs/s", rate(kv.fsyncs_per_second)], ["connections", kv.connections], ["memory", bytes(kv.rss_bytes)]];
  const dl = $("kv-stats");
  dl.replaceChildren();
  for (const [k, v] of stats) dl.append(el("dt", k), el("dd", String(v)));
}

function render(s) {
  $("project").textContent = s.project;
  $("clock").textContent = new Date(s.time).toLocaleTimeString();
  $("status-error").textContent = s.status_error || "";
  renderProcesses(s.processes);
  renderGateway(s.gateway);
  renderKV(s.kv);
  sessionStorage.setItem("history", JSON.stringify(history));
}

// The log of one process. What the page showed is kept in sessionStorage
// with the id of its last line, so a reload shows it again and asks the
// server only for what came after (no line twice, none lost).
const LOG_KEEP = 500;
function logState(name) {
  try { return JSON.parse(sessionStorage.getItem("log:" + name)) || { id: "", lines: [] }; } catch { return { id: "", lines: [] }; }
}
function addLine(text, id) {
  const d = el("div", text);
  d.dataset.id = id;
  applyFilter(d);
  const log = $("log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.append(d);
  while (log.childElementCount > LOG_KEEP) log.firstElementChild.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}
function applyFilter(d) {
  const q = $("log-filter").value;
  d.classList.toggle("hidden", q !== "" && !d.textContent.includes(q));
}
function openLog(name) {
  if (logSource) logSource.close();
  selected = name;
  sessionStorage.setItem("selected", name);
  for (const tr of $("processes").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.name === name);
  $("log-name").textContent = name;
  $("log").replaceChildren();
  const st = logState(name);
  for (const l of st.lines) addLine(l.text, l.id);
  logSource = new EventSource("/logs?name=" + encodeURIComponent(name) + "&last_event_id=" + encodeURIComponent(st.id));
  logSource.onmessage = (e) => {
    const text = JSON.parse(e.data);
    addLine(text, e.lastEventId);
    st.id = e.lastEventId;
    st.lines.push({ id: e.lastEventId, text });
    if (st.lines.length > LOG_KEEP) st.lines.splice(0, st.lines.length - LOG_KEEP);
    sessionStorage.setItem("log:" + name, JSON.stringify(st));
  };
}
$("log-filter").addEventListener("input", () => { for (const d of $("log").children) applyFilter(d); });

const events = new EventSource("/events");
events.addEventListener("snapshot", (e) => { $("conn").textContent = "live"; render(JSON.parse(e.data)); });
events.onerror = () => { $("conn").textContent = "reconnecting…"; };
if (selected) openLog(selected);
