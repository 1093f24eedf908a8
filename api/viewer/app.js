// CompanyOS replay viewer: the episode list and one episode's timeline, read from the episode
// API of the server that serves this page. Plain DOM, no framework, no build step.
//
// Routes (in the URL hash, so every view can be linked and reloaded):
//   #/?outcome=&scenario=&difficulty=&agent=   the list, filtered
//   #/episode/<id>/<step>                      one episode at a step (0 = the initial world)
"use strict";

// The API lives at the app's root; the page at <root>/viewer/. Relative, so a path prefix works.
const API = new URL("..", location.href.split("#")[0]);
const FILTERS = ["outcome", "scenario", "difficulty", "agent"];
const PAGE = 50;

const $ = (sel, root = document) => root.querySelector(sel);
const fill = (el, ...children) => el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

// Build DOM without innerHTML: everything shown comes from the log, including what an agent
// typed, so it must never be parsed as markup.
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, options = {}) {
  const res = await fetch(new URL(path, API), {
    headers: { "content-type": "application/json" },
    ...options,
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    throw new Error(`${res.status}: ${detail || res.statusText}`);
  }
  return body;
}

function showError(err) {
  const box = $("#error");
  box.textContent = err ? String(err.message || err) : "";
  box.hidden = !err;
}

const fmt = {
  num: (x) => (x > 0 ? "+" : x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(2),
  json: (v) => JSON.stringify(v),
  short: (id) => (id && id.length > 13 ? id.slice(0, 8) + "\u2026" : id),
  time: (t) => (t ? new Date(t * 1000).toLocaleString() : ""),
  call: (c) => `${c.app}.${c.method}`,
};

function signClass(x) {
  return x > 0 ? "pos" : x < 0 ? "neg" : "zero";
}

function outcomeBadge(outcome) {
  const o = outcome || "running";
  return h("span", { class: `badge outcome ${o}` }, o);
}

// ------------------------------------------------------------------------------ routing

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "episode" && parts[1]) {
    const step = parts[2] === undefined ? null : Number.parseInt(parts[2], 10);
    return { view: "episode", id: parts[1], step: Number.isNaN(step) ? null : step };
  }
  return { view: "list", filters: Object.fromEntries(new URLSearchParams(query)) };
}

function episodeHash(id, step) {
  return `#/episode/${encodeURIComponent(id)}` + (step === null ? "" : `/${step}`);
}

async function route() {
  showError(null);
  const r = parseHash();
  $("#list-view").hidden = r.view !== "list";
  $("#episode-view").hidden = r.view !== "episode";
  try {
    if (r.view === "list") {
      ep.id = null; // coming back to an episode fetches it again: it may have grown
      await showList(r.filters);
    }
    else await showEpisode(r.id, r.step);
  } catch (err) {
    showError(err);
  }
}

function crumbs(...items) {
  fill($("#crumbs"), items.flatMap((it, i) => [i ? h("span", { class: "sep" }, "/") : null, it]));
}

// ------------------------------------------------------------------------------ the list

const list = { key: null, gen: 0, rows: [], next: null, seen: { scenario: new Set(), agent: new Set() } };

function filterQuery(filters) {
  const q = new URLSearchParams();
  for (const f of FILTERS) if (filters[f]) q.set(f, filters[f]);
  return q;
}

async function showList(filters) {
  crumbs(h("span", {}, "episodes"));
  $("#keys-hint").textContent = "click a row or press Enter on it to open";
  const form = $("#filters");
  for (const f of FILTERS) form.elements[f].value = filters[f] || "";
  // Always from the top: episodes may have been played or forked since the last visit.
  list.key = filterQuery(filters).toString();
  list.gen += 1; // a page still in flight for the previous filters must not land in this list
  list.rows = [];
  list.next = undefined; // the newest first: no cursor yet
  $("#episodes tbody").replaceChildren();
  await loadMore(filters);
}

async function loadMore(filters) {
  const q = filterQuery(filters);
  q.set("limit", PAGE);
  q.set("order", "newest"); // what was just played or forked comes first
  if (typeof list.next === "number") q.set("before", list.next);
  $("#list-status").textContent = "loading\u2026";
  const gen = list.gen;
  const page = await api(`episodes?${q}`);
  if (gen !== list.gen) return; // the filters changed while this page was on its way
  list.next = page.next;
  list.rows.push(...page.episodes);
  const body = $("#episodes tbody");
  body.append(...page.episodes.map(episodeRow));
  for (const row of page.episodes) {
    list.seen.scenario.add(row.scenario);
    if (row.agent) list.seen.agent.add(row.agent);
  }
  $("#scenarios").replaceChildren(...[...list.seen.scenario].sort().map((s) => h("option", { value: s })));
  $("#agents").replaceChildren(...[...list.seen.agent].sort().map((s) => h("option", { value: s })));
  const n = list.rows.length;
  $("#list-status").textContent =
    n === 0 ? "No episodes match these filters." : `${n} episode${n === 1 ? "" : "s"}${list.next !== null ? " so far" : ""}`;
  $("#more").hidden = typeof list.next !== "number";
}

function episodeRow(e) {
  const open = () => (location.hash = episodeHash(e.episode_id, 0));
  return h(
    "tr",
    {
      tabindex: 0,
      dataset: { episodeId: e.episode_id },
      onclick: open,
      onkeydown: (ev) => ev.key === "Enter" && open(),
    },
    h("td", { class: "mono", title: e.episode_id }, fmt.short(e.episode_id)),
    h("td", {}, e.scenario),
    h("td", {}, String(e.difficulty)),
    h("td", {}, e.agent || h("span", { class: "muted" }, "\u2014")),
    h("td", {}, outcomeBadge(e.outcome)),
    h("td", { class: "num" }, `${e.steps} / ${e.max_steps}`),
    h("td", { class: `num ${signClass(e.total_return)}` }, fmt.num(e.total_return)),
    h("td", { class: "mono", title: e.forked_from || "" }, e.forked_from ? fmt.short(e.forked_from) : ""),
    h("td", { class: "muted" }, fmt.time(e.created_at)),
  );
}

function readFilters() {
  const form = $("#filters");
  return Object.fromEntries(FILTERS.map((f) => [f, form.elements[f].value.trim()]));
}

// ------------------------------------------------------------------------------ one episode

const ep = { id: null, data: null, sel: 0, onlyChanged: false };

async function loadTimeline(id) {
  const first = await api(`episodes/${encodeURIComponent(id)}/timeline?limit=500`);
  let next = first.next_step;
  while (next) {
    const page = await api(`episodes/${encodeURIComponent(id)}/timeline?from_step=${next}&limit=500`);
    first.steps.push(...page.steps);
    next = page.next_step;
  }
  return first;
}

async function showEpisode(id, step) {
  if (ep.id !== id || !ep.data) {
    ep.id = null;
    ep.data = null;
    $("#episode-head").replaceChildren(h("p", { class: "muted" }, "loading\u2026"));
    $("#step-list").replaceChildren();
    $("#detail").replaceChildren();
    try {
      ep.data = await loadTimeline(id);
    } catch (err) {
      fill($("#episode-head"), h("p", { class: "muted" }, "Could not load episode ", h("code", {}, id), ". ", h("a", { href: "#/" }, "Back to the list")));
      crumbs(h("a", { href: "#/" }, "episodes"), h("span", { class: "mono" }, fmt.short(id)));
      throw err;
    }
    ep.id = id; // only once loaded: a failed load is tried again next time
    renderHead();
    renderStepList();
  }
  const n = ep.data.steps.length;
  select(step === null ? 0 : Math.max(0, Math.min(step, n)), false);
  crumbs(
    h("a", { href: "#/" + (list.key ? `?${list.key}` : "") }, "episodes"),
    h("span", { class: "mono" }, fmt.short(id)),
  );
  $("#keys-hint").textContent = "\u2191\u2193 or j/k: step \u00b7 Home/End \u00b7 f: fork here \u00b7 Esc: list";
}

function renderHead() {
  const e = ep.data.episode;
  const achieved = e.milestones.filter((m) => e.progress[m.id]).length;
  const facts = [
    ["family", e.scenario],
    ["difficulty", e.difficulty],
    ["seed", e.seed],
    ["agent", e.agent || "\u2014"],
    ["steps", `${e.steps} / ${e.max_steps}`],
    ["milestones", `${achieved} / ${e.milestones.length}`],
    ["faults", e.faults],
    ["invalid", e.invalid_actions],
    ["rejected", e.rejected_actions],
  ];
  const lineage = e.forked_from
    ? h(
        "p",
        { class: "lineage" },
        "Forked from ",
        h("a", { class: "mono", href: episodeHash(e.forked_from, e.fork_step) }, e.forked_from),
        ` after step ${e.fork_step}.`,
      )
    : null;
  fill(
    $("#episode-head"),
    h(
      "div",
      { class: "title-row" },
      h("h1", { class: "mono", title: e.episode_id }, e.episode_id),
      outcomeBadge(e.outcome),
      h("span", { class: `return ${signClass(e.total_return)}` }, `return ${fmt.num(e.total_return)}`),
    ),
    h("p", { class: "task" }, e.task),
    h("dl", { class: "facts" }, facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, String(v))))),
    e.chaos_kinds.length
      ? h("p", { class: "chaos-kinds" }, "Chaos: ", e.chaos_kinds.map((k) => h("span", { class: "tag chaos" }, k)))
      : null,
    diagnosisBanner(e),
    lineage,
  );
}

// The failure label and point of no return come from failure analysis; until it has run for
// this episode they are null, and the page says nothing rather than guess.
function diagnosisBanner(e) {
  const parts = [];
  if (e.failure) {
    const at = e.failure.step === null || e.failure.step === undefined
      ? []
      : [" at ", h("a", { href: episodeHash(e.episode_id, e.failure.step) }, `step ${e.failure.step}`)];
    parts.push(
      h("span", { id: "failure-label", title: e.failure.detail || "" },
        "Failure: ", h("strong", {}, e.failure.label), ...at),
    );
    if (e.failure.detail) parts.push(h("span", { id: "failure-detail", class: "muted" }, e.failure.detail));
  }
  if (e.point_of_no_return !== null && e.point_of_no_return !== undefined) {
    // Step k is the last one after which the oracle, taking over, still succeeds: step k + 1
    // lost the episode. 0 means it was lost by the very first step.
    const k = e.point_of_no_return;
    const where = k === 0
      ? "before step 1"
      : h("a", { href: episodeHash(e.episode_id, k) }, `step ${k}`);
    parts.push(
      h("span", { id: "ponr-label", title: "the last step from which the oracle still succeeds in the remaining budget" },
        "Point of no return: ", where),
    );
  }
  if (parts.length) return h("p", { class: "diagnosis" }, parts);
  if (e.outcome && e.outcome !== "success") {
    return h("p", { class: "muted small" }, "No failure analysis for this episode yet.");
  }
  return null;
}

function stepMarkers(s, e) {
  const tag = (cls, text, title) => h("span", { class: `mark ${cls}`, title }, text);
  return [
    s.faults.length ? tag("fault", "fault", "a transient fault: the call had no effect") : null,
    s.chaos.length ? tag("chaos", "chaos", s.chaos.map((c) => c.kind).join(", ")) : null,
    s.error && !s.faults.length ? tag("error", "error", s.error) : null,
    s.gained.length ? tag("gained", `+${s.gained.length}`, `gained ${s.gained.join(", ")}`) : null,
    s.lost.length ? tag("lost", `\u2212${s.lost.length}`, `lost ${s.lost.join(", ")}`) : null,
    e.failure && e.failure.step === s.step ? tag("failure", "failure", `failure: ${e.failure.label}`) : null,
    e.point_of_no_return === s.step ? tag("ponr", "no return", "point of no return") : null,
  ];
}

function renderStepList() {
  const { steps, episode } = ep.data;
  const items = [
    h(
      "li",
      { dataset: { step: 0 }, onclick: () => select(0) },
      h("span", { class: "n" }, "0"),
      h("span", { class: "what" }, h("span", { class: "call" }, "start"), h("span", { class: "msg" }, "the initial world")),
      h("span", { class: "r zero" }, ""),
    ),
    ...steps.map((s) =>
      h(
        "li",
        {
          dataset: { step: s.step },
          class: [s.error ? "has-error" : "", s.outcome ? `ended ${s.outcome}` : ""].join(" ").trim() || null,
          onclick: () => select(s.step),
        },
        h("span", { class: "n" }, String(s.step)),
        h(
          "span",
          { class: "what" },
          h("span", { class: "call" }, fmt.call(s.call), stepMarkers(s, episode)),
          h("span", { class: "msg" }, s.message),
        ),
        h("span", { class: `r ${signClass(s.reward)}` }, fmt.num(s.reward)),
      ),
    ),
  ];
  $("#step-list").replaceChildren(...items);
  renderSparkline();
}

function renderSparkline() {
  const values = [0, ...ep.data.steps.map((s) => s.return)];
  const w = 260;
  const hgt = 54;
  const lo = Math.min(0, ...values);
  const hi = Math.max(0, ...values);
  const x = (i) => (values.length < 2 ? w / 2 : (i * (w - 8)) / (values.length - 1) + 4);
  const y = (v) => hgt - 6 - ((v - lo) / (hi - lo || 1)) * (hgt - 12);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${hgt}`);
  const line = (x1, y1, x2, y2, cls) => {
    const l = document.createElementNS(ns, "line");
    Object.entries({ x1, y1, x2, y2, class: cls }).forEach(([k, v]) => l.setAttribute(k, v));
    return l;
  };
  svg.append(line(0, y(0), w, y(0), "axis"));
  const path = document.createElementNS(ns, "polyline");
  path.setAttribute("points", values.map((v, i) => `${x(i)},${y(v)}`).join(" "));
  path.setAttribute("class", "curve");
  svg.append(path);
  const dot = document.createElementNS(ns, "circle");
  dot.setAttribute("r", 3.5);
  dot.setAttribute("class", "dot");
  svg.append(dot);
  ep.moveDot = (i) => {
    dot.setAttribute("cx", x(i));
    dot.setAttribute("cy", y(values[i]));
  };
  $("#sparkline").replaceChildren(h("span", { class: "label" }, "return"), svg);
}

function select(k, updateUrl = true) {
  const n = ep.data.steps.length;
  k = Math.max(0, Math.min(k, n));
  ep.sel = k;
  for (const li of $("#step-list").children) li.classList.toggle("selected", Number(li.dataset.step) === k);
  const current = $(`#step-list li[data-step="${k}"]`);
  if (current) current.scrollIntoView({ block: "nearest" });
  if (ep.moveDot) ep.moveDot(k);
  if (updateUrl) history.replaceState(null, "", episodeHash(ep.id, k));
  renderDetail();
}

// ------------------------------------------------------------------------------ a step

function section(title, ...body) {
  return h("section", { class: "panel" }, h("h2", {}, title), ...body);
}

function jsonBlock(value) {
  return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
}

function milestoneChips(progress, gained = [], lost = []) {
  return h(
    "div",
    { class: "chips", id: "milestones" },
    ep.data.episode.milestones.map((m) => {
      const cls = ["chip", progress[m.id] ? "done" : "", gained.includes(m.id) ? "gained" : "", lost.includes(m.id) ? "lost" : ""];
      const sign = gained.includes(m.id) ? "+ " : lost.includes(m.id) ? "\u2212 " : "";
      const title = `${m.kind}` + (m.prereqs.length ? ` \u00b7 after ${m.prereqs.join(", ")}` : "");
      return h("span", { class: cls.join(" ").trim(), title, dataset: { milestone: m.id } }, sign + m.id);
    }),
  );
}

function chaosList(chaos, faults) {
  return h(
    "ul",
    { class: "chaos-list" },
    faults.map((f) => h("li", { class: "fault" }, h("strong", {}, "fault "), `${f.app}.${f.method}: ${f.kind}`)),
    chaos.map((c) =>
      h("li", { class: "chaos" }, h("strong", {}, c.kind), ` on ${c.target}`,
        Object.keys(c.params || {}).length ? h("code", {}, " " + fmt.json(c.params)) : null),
    ),
  );
}

function renderDetail() {
  const k = ep.sel;
  const { steps, initial, episode } = ep.data;
  const s = k ? steps[k - 1] : null;
  const parts = [];
  if (!s) {
    parts.push(
      h("div", { class: "step-title" }, h("h2", {}, "Start"), h("span", { class: "muted" }, "the world before the first call")),
      initial.chaos.length ? section("Chaos injected at set-up", chaosList(initial.chaos, [])) : null,
      section("Milestones", milestoneChips(initial.progress)),
    );
  } else {
    const reward = h("span", { class: `big ${signClass(s.reward)}` }, fmt.num(s.reward));
    parts.push(
      h(
        "div",
        { class: "step-title" },
        h("h2", {}, `Step ${s.step}`, h("span", { class: "muted" }, ` of ${steps.length}`)),
        h("code", { class: "callname" }, fmt.call(s.call)),
        s.outcome ? outcomeBadge(s.outcome) : null,
        h("span", { class: "spacer" }),
        h("span", { class: "kv" }, "reward ", reward),
        h("span", { class: "kv" }, "return ", h("span", { class: `big ${signClass(s.return)}`, id: "return-so-far" }, fmt.num(s.return))),
      ),
      h(
        "div",
        { class: "grid2" },
        section("Call", jsonBlock(s.call.params ?? {}), s.call.refused ? h("p", { class: "warn" }, `refused: ${s.call.refused}`) : null),
        section(
          "Result",
          h("p", { class: "message" + (s.error ? " error" : ""), id: "result-message" }, s.message),
          s.error ? h("p", {}, "error code ", h("code", { class: "errcode" }, s.error)) : null,
          h("details", {}, h("summary", {}, "what the agent got back"), jsonBlock(s.result)),
        ),
      ),
      s.chaos.length || s.faults.length ? section("Chaos and faults", chaosList(s.chaos, s.faults)) : null,
      h(
        "div",
        { class: "grid2" },
        section("Milestones", milestoneChips(s.progress, s.gained, s.lost)),
        section(
          "Reward",
          h(
            "table",
            { class: "terms" },
            Object.entries(s.terms).map(([t, v]) => h("tr", {}, h("td", {}, t), h("td", { class: `num ${signClass(v)}` }, fmt.num(v)))),
          ),
        ),
      ),
    );
  }
  parts.push(worldPanel(s ? s.world : initial.world, s ? s.changes : []));
  parts.push(forkPanel(k, episode));
  fill($("#detail"), parts);
}

// ------------------------------------------------------------------------------ the world

const APP_TITLES = { ticketdesk: "TicketDesk", datahub: "DataHub", approvalflow: "ApprovalFlow", chaos: "Chaos", episode: "Episode" };
const pathKey = (path) => JSON.stringify(path);

// The same rule as the server's diff (projections/world_diff.py): a list of records is keyed by
// the first of these fields that names every record uniquely.
function identityOf(items, keys) {
  for (const key of keys) {
    const values = items.map((i) => (i && typeof i === "object" ? i[key] : undefined));
    if (values.every((v) => typeof v === "string") && new Set(values).size === values.length) return key;
  }
  return null;
}

function indexChanges(changes) {
  const exact = new Map();
  const within = new Set();
  for (const c of changes) {
    exact.set(pathKey(c.path), c);
    for (let i = 0; i < c.path.length; i++) within.add(pathKey(c.path.slice(0, i)));
  }
  return { exact, within };
}

function leaf(value) {
  if (value === null || value === undefined) return h("span", { class: "null" }, "null");
  if (typeof value === "object") return h("code", { class: "obj" }, fmt.json(value));
  return h("span", { class: `v ${typeof value}` }, typeof value === "string" ? value : String(value));
}

function isRecordMap(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const vals = Object.values(value);
  return vals.length > 0 && vals.every((v) => v && typeof v === "object" && !Array.isArray(v));
}

function renderNode(value, path, idx, keys) {
  const c = idx.exact.get(pathKey(path));
  if (c && c.op === "changed") {
    return h("span", { class: "changed", dataset: { path: pathKey(path) } }, h("del", {}, leaf(c.before)), " \u2192 ", h("ins", {}, leaf(c.after)));
  }
  if (Array.isArray(value)) {
    const key = value.length ? identityOf(value, keys) : null;
    if (!key) return leaf(value);
    const records = value.map((item) => renderRecord(item, [...path, item[key]], item[key], idx, keys));
    // Records gone since the last step are shown struck out where they were.
    for (const [pk, ch] of idx.exact) {
      const p = JSON.parse(pk);
      if (ch.op === "removed" && p.length === path.length + 1 && pathKey(p.slice(0, -1)) === pathKey(path)) {
        records.push(renderRecord(ch.before, p, p[p.length - 1], idx, keys, "removed"));
      }
    }
    return h("div", { class: "records" }, records);
  }
  if (isRecordMap(value)) {
    // A map of records (approval types by name) reads like a list of them.
    return h("div", { class: "records" }, Object.entries(value).map(([k, v]) => renderRecord(v, [...path, k], k, idx, keys)));
  }
  if (value && typeof value === "object") {
    return h(
      "dl",
      { class: "fields" },
      Object.entries(value).map(([k, v]) => {
        const p = [...path, k];
        const ch = idx.exact.get(pathKey(p));
        const cls = ch ? ch.op : idx.within.has(pathKey(p)) ? "within" : null;
        return h("div", { class: cls, dataset: { path: pathKey(p) } }, h("dt", {}, k), h("dd", {}, renderNode(v, p, idx, keys)));
      }),
    );
  }
  return leaf(value);
}

function recordTitle(item, ident) {
  const value = "value" in item && "unit" in item ? `${item.value} ${item.unit}` : null;
  const hint = [item.name !== ident ? item.name : null, value, item.title, item.status, item.role]
    .filter((x) => x !== null && x !== undefined && x !== "")
    .slice(0, 2)
    .join(" \u00b7 ");
  return [h("span", { class: "mono" }, ident), hint ? h("span", { class: "muted" }, ` \u00b7 ${hint}`) : null];
}

function renderRecord(item, path, ident, idx, keys, forced = null) {
  const k = pathKey(path);
  const op = forced || (idx.exact.get(k) || {}).op || (idx.within.has(k) ? "within" : null);
  const node = h(
    "details",
    { class: `record ${op || "same"}`, dataset: { path: k }, open: op !== null && op !== "removed" },
    h("summary", {}, recordTitle(item, ident), op && op !== "within" ? h("span", { class: `tag ${op}` }, op) : null),
    // Inside an added or removed record every field is new or gone: no per-field marks.
    renderNode(item, path, op === "added" || op === "removed" ? { exact: new Map(), within: new Set() } : idx, keys),
  );
  return node;
}

function describeChange(c) {
  const where = c.path.join(" \u203a ");
  if (c.op === "added") return [h("span", { class: "tag added" }, "added"), " ", where];
  if (c.op === "removed") return [h("span", { class: "tag removed" }, "removed"), " ", where];
  return [where, ": ", h("del", {}, leaf(c.before)), " \u2192 ", h("ins", {}, leaf(c.after))];
}

function worldPanel(world, changes) {
  const keys = ep.data.identity_keys;
  const idx = indexChanges(changes);
  const summary = changes.length
    ? h(
        "ul",
        { class: "changes", id: "changes" },
        changes.map((c) =>
          h("li", {
            class: c.op,
            onclick: () => {
              const target = document.querySelector(`#world [data-path="${CSS.escape(pathKey(c.path))}"]`);
              if (!target) return;
              const record = target.closest("details");
              if (record) record.open = true;
              target.scrollIntoView({ block: "center", behavior: "smooth" });
              target.classList.add("flash");
              setTimeout(() => target.classList.remove("flash"), 1200);
            },
          }, describeChange(c)),
        ),
      )
    : h("p", { class: "muted", id: "changes" }, ep.sel ? "Nothing in the world changed at this step." : "");
  const toggle = h(
    "label",
    { class: "toggle" },
    h("input", {
      type: "checkbox",
      id: "only-changed",
      checked: ep.onlyChanged,
      onchange: (ev) => {
        ep.onlyChanged = ev.target.checked;
        $("#world").classList.toggle("only-changed", ep.onlyChanged);
      },
    }),
    " only what changed",
  );
  // The apps first; the episode's own fields (also in the header) last.
  const order = ["ticketdesk", "datahub", "approvalflow", "chaos", "episode"];
  const rank = (k) => (order.includes(k) ? order.indexOf(k) : order.length);
  const entries = Object.entries(world).sort(([a], [b]) => rank(a) - rank(b));
  const apps = entries.map(([app, value]) => {
    const p = [app];
    const touched = idx.within.has(pathKey(p)) || idx.exact.has(pathKey(p));
    return h(
      "section",
      { class: `app ${touched ? "within" : "same"}`, dataset: { path: pathKey(p) } },
      h("h3", {}, APP_TITLES[app] || app),
      renderNode(value, p, idx, keys),
    );
  });
  return section(
    "World after this step",
    h("div", { class: "world-tools" }, h("span", { class: "muted" }, `${changes.length} change${changes.length === 1 ? "" : "s"}`), toggle),
    summary,
    h("div", { id: "world", class: "world" + (ep.onlyChanged ? " only-changed" : "") }, apps),
  );
}

// ------------------------------------------------------------------------------ forking

function shellQuote(s) {
  return "'" + s.replaceAll("'", "'\\''") + "'";
}

// A JSON value as a Python literal (true/false/null differ; strings and numbers agree).
function py(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return `[${v.map(py).join(", ")}]`;
  if (typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

function continueCommands(newId, k) {
  const next = ep.data.steps[k]; // the source's call after step k, if it made one
  const call = next
    ? { app: next.call.app, method: next.call.method, params: next.call.params ?? {} }
    : { app: "ticketdesk", method: "list_tickets", params: {} };
  const base = API.href.replace(/\/$/, "");
  const action = { ...call, episode_id: newId };
  const curl = `curl -s -X POST ${base}/step -H 'content-type: application/json' \\\n  -d ${shellQuote(JSON.stringify({ action }))}`;
  const client = [
    "from companyos import CompanyOSAction",
    "from companyos.api.client import CompanyOSClient",
    `with CompanyOSClient(${JSON.stringify(base)}).sync() as env:`,
    `    result = env.step(CompanyOSAction(app=${py(call.app)}, method=${py(call.method)}, params=${py(call.params)}, episode_id=${py(newId)}))`,
    "    print(result.observation.step, result.observation.message, result.reward)",
  ].join("\n");
  const generic = [
    "from openenv.core import GenericEnvClient",
    `with GenericEnvClient(base_url=${JSON.stringify(base)}).sync() as env:`,
    `    result = env.step(${py(action)})`,
    "    print(result.observation[\"step\"], result.observation[\"message\"], result.reward)",
  ].join("\n");
  return { call, curl, client, generic, replaysSource: Boolean(next) };
}

function copyable(label, text, id) {
  const pre = h("pre", { class: "cmd", id }, text);
  const button = h("button", {
    type: "button",
    class: "quiet copy",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "copied";
      } catch {
        // No clipboard (plain http off localhost): select the text for Ctrl+C instead.
        getSelection().selectAllChildren(pre);
        button.textContent = "selected: press Ctrl+C";
      }
      setTimeout(() => (button.textContent = "copy"), 1500);
    },
  }, "copy");
  return h("div", { class: "copyable" }, h("div", { class: "copy-head" }, h("span", {}, label), button), pre);
}

function forkPanel(k, episode) {
  const ended = k === ep.data.steps.length && (episode.outcome === "success" || episode.outcome === "failure" || episode.outcome === "timeout");
  const result = h("div", { id: "fork-result" });
  const button = h(
    "button",
    {
      type: "button",
      id: "fork-button",
      disabled: ended,
      title: ended ? "the episode had ended by this step: fork at an earlier one" : "f",
      onclick: () => fork(k, result, button),
    },
    k ? `Fork after step ${k}` : "Fork from the start",
  );
  return section(
    "Fork",
    h("p", { class: "muted" }, "A new episode from this point: the log up to here is copied, the original is untouched."),
    h("div", { class: "fork-row" }, button, ended ? h("span", { class: "muted" }, "The episode had ended by this step: fork at an earlier one.") : null),
    result,
  );
}

async function fork(k, result, button) {
  button.disabled = true;
  const label = button.textContent;
  button.textContent = "Forking\u2026";
  notify(`Forking ${k ? `after step ${k}` : "from the start"}\u2026`);
  showError(null);
  try {
    const out = await api(`episodes/${encodeURIComponent(ep.id)}/fork`, {
      method: "POST",
      body: JSON.stringify({ at_step: k }),
    });
    const cmds = continueCommands(out.episode_id, k);
    result.replaceChildren(
      h(
        "p",
        { class: "forked" },
        "New episode ",
        h("code", { id: "fork-id", dataset: { episodeId: out.episode_id } }, out.episode_id),
        ` (step ${out.observation.step} of ${out.observation.max_steps}). `,
        h("a", { href: episodeHash(out.episode_id, k) }, "open it"),
      ),
      h(
        "p",
        { class: "muted small" },
        cmds.replaysSource
          ? `Continue it: the commands below make the original's next call (${fmt.call(cmds.call)}); change it to try something else.`
          : `Continue it: the commands below make a harmless ${fmt.call(cmds.call)}; change it to what you want to try.`,
      ),
      copyable("curl", cmds.curl, "cmd-curl"),
      copyable("Python (CompanyOSClient)", cmds.client, "cmd-python"),
      copyable("Python (OpenEnv GenericEnvClient)", cmds.generic, "cmd-generic"),
    );
    notify(`Forked: new episode ${out.episode_id}`, episodeHash(out.episode_id, k));
  } catch (err) {
    result.replaceChildren(h("p", { class: "warn", id: "fork-error" }, String(err.message || err)));
    notify(`Fork failed: ${err.message || err}`);
  } finally {
    button.disabled = false;
    button.textContent = label;
    // The panel may be below the fold (the key works from anywhere): bring the answer into view.
    result.scrollIntoView({ block: "nearest" });
  }
}

// A short line under the top bar that says what a key press did, wherever the page is scrolled.
let noticeTimer = null;
function notify(text, href) {
  const box = $("#notice");
  box.replaceChildren(text, href ? h("a", { href }, " open it") : "");
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (box.hidden = true), 6000);
}

// ------------------------------------------------------------------------------ keys

function onKey(ev) {
  const t = ev.target;
  if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
  if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
  if ($("#episode-view").hidden || !ep.data) return;
  const n = ep.data.steps.length;
  const moves = {
    ArrowDown: ep.sel + 1, j: ep.sel + 1, ArrowRight: ep.sel + 1,
    ArrowUp: ep.sel - 1, k: ep.sel - 1, ArrowLeft: ep.sel - 1,
    Home: 0, g: 0, End: n, G: n,
  };
  if (ev.key in moves) {
    ev.preventDefault();
    select(moves[ev.key]);
  } else if (ev.key === "f") {
    const b = $("#fork-button");
    if (b && !b.disabled) b.click();
  } else if (ev.key === "Escape") {
    location.hash = "#/" + (list.key ? `?${list.key}` : "");
  }
}

// ------------------------------------------------------------------------------ start

function init() {
  $("#filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/?" + filterQuery(readFilters());
  });
  for (const name of FILTERS) {
    $("#filters").elements[name].addEventListener("change", () => $("#filters").requestSubmit());
  }
  $("#clear-filters").addEventListener("click", () => (location.hash = "#/"));
  $("#more").addEventListener("click", () => loadMore(parseHash().filters || {}).catch(showError));
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  route();
}

init();
