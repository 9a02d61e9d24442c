// paxm dashboard: plain JS, no dependencies, nothing from the network.
// Every value from the API is inserted as text (never as HTML): memories and queries are data.
"use strict";

const TOKEN = document.querySelector('meta[name="paxm-token"]').content;
const DAYS_META = parseInt(document.querySelector('meta[name="paxm-days"]').content, 10);
const DEFAULT_DAYS = Number.isNaN(DAYS_META) ? 7 : DAYS_META; // 0 or less: the whole retention window
const PAGE = 25;
const SVGNS = "http://www.w3.org/2000/svg";
let INFO = null;

// ---- helpers ----------------------------------------------------------------------------

// an HTML element (or, with the SVG namespace, an SVG one); values go in as text, never as markup
function h(tag, props, ...children) {
  return make(document.createElement(tag), props, children);
}

function s(tag, attrs, ...children) {
  return make(document.createElementNS(SVGNS, tag), attrs, children);
}

function make(el, props, children) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.setAttribute("class", value);
    else if (key === "text") el.textContent = String(value);
    else if (key === "style") Object.assign(el.style, value); // CSSOM: allowed by the CSP, unlike style=""
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  return append(el, children);
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// replaceChildren that flattens arrays and skips null/false (conditional parts of a view)
function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

class ApiError extends Error {}

async function api(path, params, method = "GET") {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const res = await fetch(url, { method, headers: { "X-Paxm-Token": TOKEN }, credentials: "same-origin" });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new ApiError(body.error || res.statusText);
  return body;
}

const fmt = new Intl.NumberFormat();
const num = (n) => fmt.format(n || 0);

function when(stamp) {
  if (!stamp) return "";
  const d = new Date(stamp);
  if (isNaN(d)) return stamp;
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

const pill = (text, cls) => h("span", { class: `pill ${cls || text}`, text });
const empty = (text) => h("div", { class: "empty", text });
const card = (label, value, sub, cls) =>
  h("div", { class: `card ${cls || ""}`, "data-card": label }, h("div", { class: "label", text: label }),
    h("div", { class: "value", text: value }), sub ? h("div", { class: "sub", text: sub }) : null);

function queryText(e) {
  if (e.query_preview) return e.query_preview;
  if (e.query_hash) return `#${e.query_hash} (${e.query_length || 0} chars)`;
  return "";
}

function describe(e) {
  switch (e.kind) {
    case "recall": case "hook_recall":
      return `${e.hit_count || 0} hit(s)` + (e.inserted_count ? `, ${e.inserted_count} inserted` : "") + (queryText(e) ? ` for ${queryText(e)}` : "");
    case "remember": return `${e.ref_count || 0} stored, profile ${e.profile || "default"}`;
    case "hook_write": return `${e.skipped ? "not buffered" : "buffered"} (${e.target || "?"}/${e.hook_event || "?"})`;
    case "hook_delivery": return `${e.provider || "?"}: ${e.hook_event === "delivery_dead" ? "dead" : e.success ? "delivered" : "failed"} episode ${e.episode_id || ""}`;
    default: return e.command || "";
  }
}

function pager(data, onPage) {
  const from = data.total ? data.offset + 1 : 0;
  const to = data.offset + data.events_len;
  return h("div", { class: "pager" },
    h("span", { class: "page-info", text: `${num(from)}–${num(to)} of ${num(data.total)}` }),
    h("button", { type: "button", class: "prev", disabled: data.offset <= 0, onclick: () => onPage(Math.max(0, data.offset - data.limit)) }, "‹ Newer"),
    h("button", { type: "button", class: "next", disabled: to >= data.total, onclick: () => onPage(data.offset + data.limit) }, "Older ›"));
}

function select(name, options, value, onchange, label) {
  const el = h("select", { name, onchange: (ev) => onchange(ev.target.value) },
    options.map(([v, text]) => h("option", { value: v, selected: v === value, text })));
  return h("label", {}, label || name, el);
}

function showError(target, err) {
  fill(target, h("div", { class: "notice bad", role: "alert", text: `Error: ${err.message || err}` }));
}

// ---- charts -----------------------------------------------------------------------------

function dayRange(since, until, days) {
  const out = [];
  const end = until ? new Date(until) : new Date();
  const endDay = Date.UTC(end.getUTCFullYear(), end.getUTCMonth(), end.getUTCDate());
  const n = Math.min(Math.max(days, 1), 60);
  for (let i = n - 1; i >= 0; i--) out.push(new Date(endDay - i * 86400000).toISOString().slice(0, 10));
  return out;
}

function barChart(id, dates, series) {
  // grouped bars per day; series = [{key,label,cls,values:{date:number}}]
  const W = 1200, H = 250, L = 40, B = 26, T = 12, R = 8;
  const max = Math.max(1, ...series.flatMap((sr) => dates.map((d) => sr.values[d] || 0)));
  // up to five gridlines at round values: the step is 1, 2 or 5 times a power of ten
  const raw = max / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * mag).find((v) => v >= raw));
  const ticks = Math.ceil(max / step);
  const top = step * ticks;
  const innerW = W - L - R, innerH = H - T - B;
  const slot = innerW / dates.length;
  const barW = Math.max(2, Math.min(26, (slot * 0.7) / series.length));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "activity per day", id });
  for (let i = 0; i <= ticks; i++) {
    const y = T + innerH - (innerH * i) / ticks;
    svg.append(s("line", { class: "axis", x1: L, x2: W - R, y1: y, y2: y }));
    svg.append(s("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, num(step * i)));
  }
  const every = Math.ceil(dates.length / 10);
  dates.forEach((d, i) => {
    const x0 = L + slot * i + (slot - barW * series.length) / 2;
    series.forEach((sr, j) => {
      const v = sr.values[d] || 0;
      const bh = (innerH * v) / top;
      const rect = s("rect", { class: `bar ${sr.cls}`, x: x0 + j * barW, y: T + innerH - bh, width: barW - 1, height: Math.max(bh, v ? 1 : 0), rx: 2, "data-series": sr.key, "data-date": d, "data-value": v },
        s("title", {}, `${d} ${sr.label}: ${v}`));
      svg.append(rect);
    });
    if (i % every === 0) svg.append(s("text", { x: L + slot * i + slot / 2, y: H - 8, "text-anchor": "middle" }, d.slice(5)));
  });
  const legend = h("div", { class: "legend" }, series.map((sr) => h("span", { class: sr.cls, text: sr.label })));
  return h("div", { class: "chart" }, svg, legend);
}

function hbars(rows, metric, unit) {
  if (!rows.length) return empty("Nothing yet.");
  const max = Math.max(1, ...rows.map((r) => r.counter[metric] || 0));
  return h("div", { class: "hbars" }, rows.map((r) => h("div", { class: "hbar", "data-name": r.name },
    h("span", { class: "name", title: r.name, text: r.name }),
    h("span", { class: "track" }, h("span", { class: "fill", style: { width: `${(100 * (r.counter[metric] || 0)) / max}%` } })),
    h("span", { class: "num", text: `${num(r.counter[metric])}${unit || ""}` }))));
}

// ---- views ------------------------------------------------------------------------------

const views = {};
const state = { recalls: { offset: 0, mode: "all" }, logs: { offset: 0, kind: "", size: PAGE }, queue: { offset: 0, state: "" }, memories: { q: "", profile: "", project: "" } };

views.overview = async (root) => {
  const days = state.days === undefined ? DEFAULT_DAYS : state.days;
  const sum = await api("/api/summary", { days });
  const t = sum.totals || {};
  const daily = {};
  for (const row of sum.daily || []) daily[row.date] = row.counter;
  const dates = dayRange(sum.since, sum.until, sum.days);
  const pick = (k) => Object.fromEntries(dates.map((d) => [d, (daily[d] || {})[k] || 0]));
  const windows = [1, 7, 14, 30];
  if (!windows.includes(sum.days)) windows.push(sum.days);
  const daysSel = select("days", windows.sort((a, b) => a - b).map((v) => [String(v), v === 1 ? "Today" : `${v} days`]), String(sum.days),
    (v) => { state.days = parseInt(v, 10); render(); }, "Window");
  const storage = sum.storage || {};
  fill(root, 
    h("div", { class: "toolbar" }, h("h2", { text: `Last ${sum.days} day${sum.days === 1 ? "" : "s"}` }), h("div", { class: "filters" }, daysSel)),
    h("div", { class: "cards" },
      card("Recalls", num(t.recalls), `${num(t.hits)} hits, ${num(t.inserted)} inserted`),
      card("Writes", num(t.writes), `${num(t.refs)} refs, ${num(t.flushes)} flushes`),
      card("Events", num(t.events), `${num(t.successes)} ok`),
      card("Errors", num(t.errors), `${num(t.provider_errors)} provider errors`, t.errors ? "bad" : "ok"),
      card("Recall timeouts", num(t.recall_timeouts), `${num(t.skipped)} skipped`, t.recall_timeouts ? "warn" : "")),
    h("section", { class: "panel", id: "activity" }, h("h3", { text: "Activity per day" }),
      barChart("daily-chart", dates, [
        { key: "recalls", label: "Recalls", cls: "s1", values: pick("recalls") },
        { key: "writes", label: "Writes", cls: "s2", values: pick("writes") },
        { key: "hits", label: "Hits", cls: "s3", values: pick("hits") },
        { key: "errors", label: "Errors", cls: "s4", values: pick("errors") },
      ])),
    h("div", { class: "grid two" },
      h("section", { class: "panel", id: "by-agent" }, h("h3", { text: "By agent (passive)" }), hbars(sum.agents || [], "events")),
      h("section", { class: "panel", id: "by-profile" }, h("h3", { text: "By profile" }), hbars(sum.profiles || [], "events"))),
    h("section", { class: "panel", id: "by-provider" }, h("h3", { text: "By provider" }),
      (sum.providers || []).length ? h("table", {},
        h("thead", {}, h("tr", {}, ["Provider", "Recalls", "Hits", "Writes", "Refs", "Errors", "p95 recall", "Avg write"].map((c, i) => h("th", { class: i ? "num" : "", text: c })))),
        h("tbody", {}, sum.providers.map((p) => {
          const c = p.counter;
          const avg = c.provider_write_samples ? Math.round(c.provider_write_duration_ms / c.provider_write_samples) : 0;
          return h("tr", { "data-provider": p.name }, h("td", { text: p.name }),
            [c.recalls, c.hits, c.writes, c.refs].map((v) => h("td", { class: "num", text: num(v) })),
            h("td", { class: "num" }, c.errors ? pill(num(c.errors), "error") : "0"),
            h("td", { class: "num", text: c.provider_recall_samples ? `${p.recall_p95_ms} ms` : "–" }),
            h("td", { class: "num", text: c.provider_write_samples ? `${avg} ms` : "–" }));
        }))) : empty("No provider activity in this window.")),
    h("section", { class: "panel", id: "storage" }, h("h3", { text: "Storage" }),
      h("dl", { class: "kv" },
        h("dt", { text: "Telemetry dir" }), h("dd", { class: "mono", text: storage.dir || "" }),
        h("dt", { text: "Event log" }), h("dd", { text: `${bytes(storage.event_bytes)} of ${bytes(storage.max_event_file_bytes)} (keeps ${storage.max_event_files || 0} files)` }),
        h("dt", { text: "Total on disk" }), h("dd", { text: bytes(storage.total_bytes) }),
        h("dt", { text: "Capture queue" }), h("dd", { class: "mono", text: INFO ? INFO.queue_path : "" }),
        h("dt", { text: "Config" }), h("dd", { class: "mono", text: INFO ? INFO.config_path : "" }))),
  );
};

function hitsTable(hits) {
  if (!hits || !hits.length) return h("span", { class: "muted", text: "No hits recorded." });
  return h("table", { class: "hits" }, h("thead", {}, h("tr", {}, ["Provider", "Tier", "Score", "Relevance", "Memory"].map((c) => h("th", { text: c })))),
    h("tbody", {}, hits.map((x) => h("tr", {}, h("td", { text: x.provider || "" }), h("td", { text: x.tier || "" }),
      h("td", { class: "num", text: (x.score || 0).toFixed(3) }), h("td", { class: "num", text: (x.relevance || 0).toFixed(3) }),
      h("td", {}, x.text_preview ? h("span", { text: x.text_preview }) : h("span", { class: "mono muted", text: x.id || "" }))))));
}

views.recalls = async (root) => {
  const st = state.recalls;
  const [facets, data] = await Promise.all([
    api("/api/facets"),
    api("/api/events", { kind: "recall,hook_recall", mode: st.mode, state: st.state, profile: st.profile, q: st.q, hit_provider: st.hit_provider, hit_q: st.hit_q, limit: PAGE, offset: st.offset }),
  ]);
  const set = (key) => (v) => { st[key] = v; st.offset = 0; render(); };
  const text = (key, label, placeholder, disabled) => h("label", {}, label,
    h("input", { type: "search", name: key, value: st[key] || "", placeholder, disabled, onchange: (ev) => set(key)(ev.target.value.trim()) }));
  const previews = INFO && INFO.query_previews;
  const filters = h("div", { class: "filters", id: "recall-filters" },
    select("mode", [["all", "All"], ["active", "Active (CLI)"], ["passive", "Passive (hooks)"], ["mcp", "MCP"]], st.mode, set("mode"), "Mode"),
    select("state", [["", "Any"], ["success", "Success"], ["error", "Error"], ["timeout", "Timeout"], ["skipped", "Skipped"]], st.state || "", set("state"), "State"),
    select("profile", [["", "Any"], ...facets.profiles.map((p) => [p, p])], st.profile || "", set("profile"), "Profile"),
    text("q", "Query", previews ? "text or hash" : "hash prefix"),
    select("hit_provider", [["", "Any"], ...facets.hit_providers.map((p) => [p, p])], st.hit_provider || "", set("hit_provider"), "Hit provider"),
    text("hit_q", "Hit text", previews ? "text or memory id" : "memory id"));
  data.events_len = data.events.length;
  const body = h("tbody", {});
  for (const e of data.events) {
    const detail = h("tr", { class: "detail", hidden: true }, h("td", { colspan: 8 }, hitsTable(e.recall_hits),
      e.error ? h("div", { class: "notice bad", text: e.error }) : null,
      (e.provider_errors || []).length ? h("div", { class: "muted", text: "Provider errors: " + e.provider_errors.map((p) => p.provider).join(", ") }) : null));
    const row = h("tr", { class: "clickable recall-row", "data-state": e.state, "data-mode": e.mode, onclick: () => { detail.hidden = !detail.hidden; } },
      h("td", { class: "mono", text: when(e.time) }), h("td", {}, pill(e.mode, "kind")),
      h("td", { text: e.target ? `${e.target}${e.hook_event ? "/" + e.hook_event : ""}` : e.source || "" }),
      h("td", { text: e.profile || "" }), h("td", {}, pill(e.state)),
      h("td", { class: "num", text: num(e.hit_count) }), h("td", { class: "num", text: `${e.duration_ms || 0} ms` }),
      h("td", { class: "trunc query", title: queryText(e), text: queryText(e) }));
    body.append(row, detail);
  }
  fill(root, 
    h("h2", { text: "Recalls" }),
    previews ? null : h("div", { class: "notice", id: "privacy-note", text: "Query and hit text are not kept (telemetry.capture_query_preview is off): queries show as a hash and length, and the query filter matches hash prefixes." }),
    filters,
    h("section", { class: "panel" }, data.events.length ? h("table", { id: "recalls-table" },
      h("thead", {}, h("tr", {}, ["Time", "Mode", "Agent / source", "Profile", "State", "Hits", "Took", "Query"].map((c, i) => h("th", { class: i === 5 || i === 6 ? "num" : "", text: c })))), body)
      : empty("No recall matches these filters."), pager(data, (o) => { st.offset = o; render(); })));
};

views.injections = async (root) => {
  // one row per injection; its memories (rank, scores, matched terms, freshness) below it
  const data = await api("/api/injections", { limit: 100 });
  const body = h("tbody", {});
  for (const e of data.injections) {
    const mems = e.memories || [];
    body.append(h("tr", { class: "injection-row" },
      h("td", { class: "mono", text: when(e.time) }), h("td", { text: `${e.target || ""}/${e.hook_event || ""}` }),
      h("td", { text: e.reason || "prompt" }), h("td", { class: "num", text: num(mems.length) }),
      h("td", { class: "num", text: num(e.withheld_count || 0) }), h("td", { class: "trunc query", title: queryText(e), text: queryText(e) })));
    for (const m of mems) {
      const fresh = ["freshness", "freshness_reason", "stale_reason", "superseded_by"].filter((k) => m[k]).map((k) => `${k}=${m[k]}`).join(" ");
      body.append(h("tr", { class: "detail injection-memory" }, h("td", { colspan: 6, class: "mono",
        text: `#${m.position} rank ${m.rank} ${m.provider}:${m.id} relevance ${(m.relevance || 0).toFixed(3)} score ${(m.score || 0).toFixed(3)} terms: ${(m.matched_terms || []).join(", ") || "-"} ${fresh}` })));
    }
  }
  fill(root, h("h2", { text: "Injections" }),
    h("section", { class: "panel" }, data.injections.length ? h("table", { id: "injections-table" },
      h("thead", {}, h("tr", {}, ["Time", "Agent / event", "Reason", "Injected", "Withheld", "Query"].map((c, i) => h("th", { class: i === 3 || i === 4 ? "num" : "", text: c })))), body)
      : empty("No passive injections recorded yet.")));
};

views.sessions = async (root) => {
  if (state.sessionKey) return sessionTimeline(root, state.sessionKey);
  const data = await api("/api/sessions");
  // Hook recalls carry no session key in telemetry today: show the column only when it has data.
  const withRecalls = data.sessions.some((x) => x.recalls);
  const cols = ["Session", "Agent", "Last activity", ...(withRecalls ? ["Recalls"] : []), "Deliveries", "Failed", "Episodes"];
  fill(root, h("h2", { text: "Capture sessions" }),
    h("section", { class: "panel" }, data.sessions.length ? h("table", { id: "sessions-table" },
      h("thead", {}, h("tr", {}, cols.map((c, i) => h("th", { class: i > 2 ? "num" : "", text: c })))),
      h("tbody", {}, data.sessions.map((x) => h("tr", { class: "clickable session-row", "data-key": x.key, onclick: () => { location.hash = "#sessions/" + encodeURIComponent(x.key); } },
        h("td", { class: "mono trunc", title: x.key, text: shortKey(x.key) }), h("td", { text: x.target || "" }), h("td", { class: "mono", text: when(x.last_seen) }),
        withRecalls ? h("td", { class: "num", text: num(x.recalls) }) : null, h("td", { class: "num", text: num(x.deliveries) }),
        h("td", { class: "num" }, x.failed_deliveries ? pill(num(x.failed_deliveries), "error") : "0"), h("td", { class: "num", text: num(x.episodes) })))))
      : empty("No capture sessions yet: they appear once an agent's hooks write through paxm.")));
};

function shortKey(key) {
  const m = /^([^/]+)\/workspace\/(.*)\/session\/(.*)$/.exec(key);
  if (!m) return key;
  const dir = m[2].split("/").filter(Boolean).pop() || m[2];
  return `${m[1]} · ${dir} · ${m[3]}`;
}

async function sessionTimeline(root, key) {
  const data = await api("/api/session", { key });
  const items = [];
  for (const e of data.events) items.push({ t: e.time, cls: e.success ? "event" : "error", node: h("div", {},
    h("div", { class: "when", text: when(e.time) }),
    h("div", { class: "what" }, pill(e.kind, "kind"), " ", pill(e.state), " ", describe(e)),
    e.error ? h("div", { class: "muted", text: e.error }) : null) });
  for (const ep of data.episodes) items.push({ t: ep.created_at, cls: ep.state === "dead" ? "dead episode" : "episode", node: h("div", {},
    h("div", { class: "when", text: when(ep.created_at) }),
    h("div", { class: "what" }, pill("episode", "kind"), " ", pill(ep.state), ` ${ep.event_count} captured event(s), sequence ${ep.first_sequence}–${ep.last_sequence}`),
    h("div", { class: "muted mono", text: ep.episode_id }),
    ep.deliveries.map((d) => h("div", { class: "what" }, "→ ", d.provider, " ", pill(d.state), ` ${d.attempts} attempt(s)`, d.last_error ? h("span", { class: "muted", text: ` · ${d.last_error}` }) : null))) });
  items.sort((a, b) => (a.t || "").localeCompare(b.t || ""));
  fill(root, 
    h("div", { class: "breadcrumb" }, h("a", { href: "#sessions", text: "← All sessions" })),
    h("h2", { text: `Session ${shortKey(key)}` }),
    h("section", { class: "panel" }, h("dl", { class: "kv" }, h("dt", { text: "Key" }), h("dd", { class: "mono", text: key }), h("dt", { text: "Agent" }), h("dd", { text: data.target || "" }))),
    h("section", { class: "panel" }, h("h3", { text: "Timeline" }),
      h("ol", { class: "timeline", id: "timeline" }, items.map((it) => h("li", { class: it.cls }, it.node)))));
}

views.logs = async (root) => {
  const st = state.logs;
  const [facets, data] = await Promise.all([api("/api/facets"), api("/api/events", { kind: st.kind, limit: st.size, offset: st.offset })]);
  data.events_len = data.events.length;
  fill(root, h("h2", { text: "Logs" }),
    h("div", { class: "filters", id: "log-filters" },
      select("kind", [["", "All kinds"], ...facets.kinds.map((k) => [k, k])], st.kind, (v) => { st.kind = v; st.offset = 0; render(); }, "Kind"),
      select("size", [10, 25, 50, 100].map((n) => [String(n), `${n} per page`]), String(st.size), (v) => { st.size = parseInt(v, 10); st.offset = 0; render(); }, "Page size")),
    h("section", { class: "panel" }, data.events.length ? h("table", { id: "logs-table" },
      h("thead", {}, h("tr", {}, ["Time", "Kind", "Source", "State", "Took", "What"].map((c, i) => h("th", { class: i === 4 ? "num" : "", text: c })))),
      h("tbody", {}, data.events.map((e) => h("tr", { class: "log-row", "data-kind": e.kind },
        h("td", { class: "mono", text: when(e.time) }), h("td", {}, pill(e.kind, "kind")), h("td", { text: e.source || "" }),
        h("td", {}, pill(e.state)), h("td", { class: "num", text: `${e.duration_ms || 0} ms` }),
        h("td", {}, describe(e), e.error ? h("div", { class: "muted", text: e.error }) : null)))))
      : empty("No events."), pager(data, (o) => { st.offset = o; render(); })));
};

views.queue = async (root) => {
  const st = state.queue;
  const data = await api("/api/queue", { state: st.state, limit: PAGE, offset: st.offset });
  const q = data.status;
  const d = q.deliveries || {};
  if (!q.exists) {
    fill(root, h("h2", { text: "Capture queue" }), h("section", { class: "panel" }, empty(`No capture queue yet (${q.path}): it is created by the first hook write.`)));
    return;
  }
  const message = h("div", { id: "retry-result" });
  const dead = q.dead_deliveries || [];
  const retry = h("button", { type: "button", class: "danger", id: "retry-dead", disabled: !dead.length, onclick: async () => {
    retry.disabled = true;
    try {
      const res = await api("/api/queue/retry", {}, "POST");
      state.flash = `Revived ${res.revived} dead deliver${res.revived === 1 ? "y" : "ies"}; the hook daemon (or 'paxm queue flush') delivers them.`;
      render();
    } catch (err) { showError(message, err); retry.disabled = false; }
  } }, `Retry ${dead.length} dead deliver${dead.length === 1 ? "y" : "ies"}`);
  const flash = state.flash; state.flash = "";
  const eps = q.episodes || {};
  const epTotal = Object.values(eps).reduce((a, b) => a + b, 0);
  data.events_len = data.deliveries.length;
  data.limit = data.limit || PAGE;
  fill(root, h("h2", { text: "Capture queue" }),
    flash ? h("div", { class: "notice", id: "flash", text: flash }) : null, message,
    h("div", { class: "cards", id: "queue-cards" },
      card("Pending", num((d.pending || 0) + (d.retry || 0) + (d.delivering || 0)), `${num(q.open_events)} open event(s)`, d.retry ? "warn" : ""),
      card("Delivered", num(d.delivered), `${num(eps.delivered)} of ${num(epTotal)} episode(s) fully delivered`, "ok"),
      card("Dead", num(d.dead), `${num(eps.dead)} episode(s) affected`, d.dead ? "bad" : ""),
      card("Oldest pending", q.oldest_pending_age_seconds == null ? "–" : `${Math.round(q.oldest_pending_age_seconds)} s`, `inbox: ${num((q.inbox || {}).pending)} pending`)),
    h("section", { class: "panel", id: "dead" }, h("div", { class: "toolbar" }, h("h3", { text: "Dead deliveries" }), retry),
      dead.length ? h("table", {}, h("thead", {}, h("tr", {}, ["Episode", "Provider", "Attempts", "Last error", "Last attempt"].map((c) => h("th", { text: c })))),
        h("tbody", {}, dead.map((x) => h("tr", { class: "dead-row" }, h("td", { class: "mono", text: x.episode_id }), h("td", { text: x.provider }),
          h("td", { class: "num", text: x.attempts }), h("td", { text: x.last_error }), h("td", { class: "mono", text: when(x.last_attempt_at) })))))
        : empty("Nothing dead. Every capture reached its providers or is still on its way.")),
    h("section", { class: "panel", id: "deliveries" }, h("div", { class: "toolbar" }, h("h3", { text: "Deliveries" }),
      h("div", { class: "filters" }, select("state", [["", "Any state"], ...["pending", "retry", "delivering", "delivered", "dead"].map((x) => [x, x])], st.state, (v) => { st.state = v; st.offset = 0; render(); }, "State"))),
      data.deliveries.length ? h("table", { id: "deliveries-table" }, h("thead", {}, h("tr", {}, ["Created", "Provider", "State", "Attempts", "Session", "Episode"].map((c) => h("th", { text: c })))),
        h("tbody", {}, data.deliveries.map((x) => h("tr", { class: "delivery-row", "data-state": x.state },
          h("td", { class: "mono", text: when(x.created_at) }), h("td", { text: x.provider }), h("td", {}, pill(x.state)),
          h("td", { class: "num", text: x.attempts }),
          h("td", {}, h("a", { href: "#sessions/" + encodeURIComponent(x.session_key), class: "mono", text: shortKey(x.session_key) })),
          h("td", { class: "mono muted", text: x.episode_id })))))
        : empty("No deliveries in this state."), pager(data, (o) => { st.offset = o; render(); })));
};

views.memories = async (root) => {
  const st = state.memories;
  const profiles = INFO ? INFO.recall_profiles : [];
  const input = h("input", { type: "search", name: "q", value: st.q, placeholder: "Search your memories…", autofocus: true, size: 40 });
  const prof = h("select", { name: "profile" }, profiles.map((p) => h("option", { value: p, selected: p === (st.profile || INFO.default_recall_profile), text: p })));
  const proj = h("input", { type: "text", name: "project", value: st.project, placeholder: "all projects", size: 30 });
  const results = h("div", { id: "memory-results" });
  const form = h("form", { class: "filters", id: "memory-form", onsubmit: (ev) => { ev.preventDefault(); st.q = input.value.trim(); st.profile = prof.value; st.project = proj.value.trim(); search(); } },
    h("label", {}, "Query", input), h("label", {}, "Recall profile", prof), h("label", {}, "Project", proj), h("button", { type: "submit", class: "primary" }, "Search"));
  async function search() {
    if (!st.q) { fill(results, empty("Type what you are looking for; results come from your providers through the router.")); return; }
    fill(results, h("p", { class: "muted", text: "Searching…" }));
    try {
      const data = await api("/api/memories", { q: st.q, profile: st.profile, project: st.project, limit: 20 });
      fill(results, 
        (data.provider_errors || []).length ? h("div", { class: "notice bad", text: "Some providers failed: " + data.provider_errors.map((p) => `${p.provider}: ${p.error || p.message || ""}`).join("; ") }) : null,
        data.hits.length ? h("p", { class: "muted", text: `${data.hits.length} memor${data.hits.length === 1 ? "y" : "ies"} (profile ${data.profile}; ${data.project ? "project " + data.project : "all projects"})` }) : empty("No memory matches (the profile's thresholds apply)."),
        data.hits.map((x) => h("article", { class: "memory", "data-provider": x.provider },
          h("div", { class: "meta" }, pill(x.provider, "kind"), x.tier ? pill(x.tier, "") : null, h("span", { text: `score ${(x.score || 0).toFixed(3)}` }),
            x.created_at ? h("span", { text: when(x.created_at) }) : null, x.source ? h("span", { text: `source ${x.source}` }) : null,
            h("span", { class: "project", text: x.project ? `project ${x.project}` : "every project" }),
            h("span", { class: "mono", text: x.id })),
          h("div", { class: "text", text: x.text }))));
    } catch (err) { showError(results, err); }
  }
  fill(root, h("h2", { text: "Memories" }), form, results);
  await search();
};

// ---- routing ----------------------------------------------------------------------------

let rendering = 0;
async function render() {
  const hash = decodeURIComponent(location.hash.replace(/^#/, ""));
  let [name, ...rest] = hash.split("/");
  if (!views[name]) name = "overview";
  state.sessionKey = name === "sessions" && rest.length ? rest.join("/") : "";
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.tab === name);
  const root = document.getElementById("view");
  root.dataset.view = name;
  const ticket = ++rendering;
  const target = h("div", {});
  try {
    if (!INFO) INFO = await api("/api/info");
    const privacy = document.getElementById("privacy");
    privacy.textContent = INFO.query_previews ? "query previews on" : "private: no query text";
    privacy.title = INFO.query_previews ? "telemetry.capture_query_preview is on: query and hit previews are kept" : "Only query hashes and lengths are kept";
    document.getElementById("foot").textContent = `paxm ${INFO.version} · ${INFO.config_path} · served on this machine only`;
    await views[name](target);
  } catch (err) {
    showError(target, err);
  }
  if (ticket !== rendering) return;
  root.replaceChildren(...target.childNodes);
  root.dataset.ready = name + (state.sessionKey ? ":session" : "");
}

window.addEventListener("hashchange", render);
document.getElementById("refresh").addEventListener("click", render);
render();
