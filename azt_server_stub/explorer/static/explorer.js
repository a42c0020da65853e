// azt stub explorer. Plain JavaScript, no library. Every value is text: no property value
// ever goes through a JavaScript Number (Int64 beyond 2^53, Doubles, DateTime ticks stay
// exact); integer ranges are checked with BigInt. The DOM is built with textContent only.
"use strict";

const TYPES = ["Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean",
  "Edm.DateTime", "Edm.Guid", "Edm.Binary"];
const state = { csrf: "", account: "", table: "", tokens: [null], page: 0, next: null,
  columns: [], hidden: new Set(), entity: null, lastSeq: 0, timers: [] };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function say(text) { $("status").textContent = text; }
function alertText(text) { $("alert").textContent = text; }

async function api(method, path, body, headers) {
  const init = { method, credentials: "same-origin", headers: Object.assign({}, headers) };
  if (method !== "GET") init.headers["X-CSRF-Token"] = state.csrf;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch("api/" + path, init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (response.status === 401 && path !== "signin") {
    showSignIn();
  }
  if (!response.ok) {
    const err = new Error(data && data.message ? data.message : response.statusText);
    err.status = response.status;
    err.code = data && data.code ? data.code : "";
    throw err;
  }
  return data;
}

function failed(err) {
  say("");
  alertText(`${err.status || ""} ${err.code || ""}: ${err.message}`.trim());
}

// -- views -----------------------------------------------------------------------------
const VIEWS = ["signin-view", "tables-view", "entities-view", "entity-view", "realism-view",
  "requests-view"];
function show(view) {
  if ($(view).hidden) say("");
  for (const v of VIEWS) $(v).hidden = v !== view;
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
  const heading = $(view).querySelector("h2");
  if (heading) heading.focus();
}

function showSignIn() {
  $("nav").hidden = true;
  state.csrf = "";
  show("signin-view");
}

async function start() {
  try {
    const session = await api("GET", "session");
    signedIn(session);
  } catch (e) {
    showSignIn();
  }
}

function signedIn(session) {
  state.csrf = session.csrf;
  state.account = session.account;
  $("whoami").textContent = "account " + session.account;
  $("nav").hidden = false;
  loadTables();
}

// -- tables ----------------------------------------------------------------------------
async function loadTables() {
  alertText("");
  show("tables-view");
  const grid = $("tables-grid");
  grid.setAttribute("aria-busy", "true");
  let data;
  try { data = await api("GET", "tables"); } catch (e) { failed(e); return; }
  finally { grid.setAttribute("aria-busy", "false"); }
  const body = grid.tBodies[0];
  body.replaceChildren();
  for (const t of data.tables) {
    const open = el("button", { type: "button", text: t.name,
      "aria-label": "Open table " + t.name, onclick: () => openTable(t.name) });
    const del = el("button", { type: "button", class: "danger", text: "Delete",
      "aria-label": "Delete table " + t.name, onclick: () => deleteTable(t.name) });
    body.append(el("tr", { role: "row" },
      el("td", { role: "gridcell" }, open),
      el("td", { role: "gridcell", class: "counts", text: t.count + (t.more ? "+" : "") }),
      el("td", { role: "gridcell" }, del)));
  }
  if (!data.tables.length) {
    body.append(el("tr", { role: "row" }, el("td", { role: "gridcell", colspan: "3",
      text: "No tables yet." })));
  }
}

async function deleteTable(name) {
  if (!window.confirm(`Delete table ${name} and all its entities?`)) return;
  try { await api("DELETE", "tables/" + encodeURIComponent(name)); say(`Table ${name} deleted.`); }
  catch (e) { failed(e); }
  loadTables();
}

// -- entities --------------------------------------------------------------------------
function openTable(name) {
  state.table = name;
  state.tokens = [null];
  state.page = 0;
  state.hidden = new Set();
  $("filter-text").value = "";
  loadEntities();
}

function queryString(extra) {
  const q = new URLSearchParams();
  const filter = $("filter-text").value.trim();
  if (filter) q.set("filter", filter);
  for (const [k, v] of Object.entries(extra || {})) if (v !== null && v !== undefined) q.set(k, v);
  return q.toString();
}

function tablePath(tail) { return "tables/" + encodeURIComponent(state.table) + "/" + tail; }

async function loadEntities() {
  alertText("");
  const token = state.tokens[state.page] || {};
  const qs = queryString({ top: $("page-size").value, npk: token.npk, nrk: token.nrk });
  let data;
  $("entities-grid").setAttribute("aria-busy", "true");
  try { data = await api("GET", tablePath("entities?" + qs)); }
  catch (e) { failed(e); if ($("entities-view").hidden) show("entities-view"); return; }
  finally { $("entities-grid").setAttribute("aria-busy", "false"); }
  if ($("entities-view").hidden) show("entities-view");
  $("entities-title").textContent = "Table " + data.table;
  state.next = data.next;
  state.columns = data.columns;
  renderColumns(data.columns);
  renderEntities(data.entities, data.columns);
  $("prev-page").disabled = state.page === 0;
  $("next-page").disabled = !data.next;
  $("page-info").textContent = `Page ${state.page + 1}, ${data.entities.length} entities` +
    (data.next ? ", more follow" : "");
  updateExports();
  updateBuilderProps(data.columns);
}

function renderColumns(columns) {
  const box = $("column-choices");
  box.replaceChildren();
  for (const c of ["Timestamp"].concat(columns.map((x) => x.name))) {
    const id = "col-" + Array.from(c).map((ch) => ch.charCodeAt(0).toString(16)).join("");
    const box1 = el("input", { type: "checkbox", id });
    box1.checked = !state.hidden.has(c);
    box1.addEventListener("change", () => {
      if (box1.checked) state.hidden.delete(c); else state.hidden.add(c);
      loadEntities();
    });
    box.append(el("span", {}, box1, el("label", { for: id, text: c })));
  }
}

function renderEntities(entities, columns) {
  const grid = $("entities-grid");
  const head = grid.tHead.rows[0];
  head.replaceChildren();
  const shown = columns.filter((c) => !state.hidden.has(c.name));
  const th = (name, type) => el("th", { role: "columnheader", scope: "col" }, name,
    el("span", { class: "type", text: type }));
  head.append(th("PartitionKey", "Edm.String"), th("RowKey", "Edm.String"));
  if (!state.hidden.has("Timestamp")) head.append(th("Timestamp", "Edm.DateTime"));
  for (const c of shown) head.append(th(c.name, c.types.join(" | ")));
  const body = grid.tBodies[0];
  body.replaceChildren();
  for (const e of entities) {
    const props = new Map(e.properties.map((p) => [p.name, p]));
    const open = el("button", { type: "button", text: e.PartitionKey === "" ? "(empty)" : e.PartitionKey,
      "aria-label": `Open entity ${e.PartitionKey} / ${e.RowKey}`,
      onclick: () => openEntity(e.PartitionKey, e.RowKey) });
    const row = el("tr", { role: "row" }, el("td", { role: "gridcell" }, open),
      el("td", { role: "gridcell", class: "value", text: e.RowKey }));
    if (!state.hidden.has("Timestamp")) row.append(el("td", { role: "gridcell", class: "value", text: e.Timestamp }));
    for (const c of shown) {
      const p = props.get(c.name);
      const cell = el("td", { role: "gridcell", class: "value", text: p ? p.value : "" });
      if (p && c.types.length > 1) cell.append(el("span", { class: "type", text: p.type }));
      row.append(cell);
    }
    body.append(row);
  }
  if (!entities.length) {
    body.append(el("tr", { role: "row" }, el("td", { role: "gridcell", colspan: String(3 + shown.length),
      text: "No entities on this page." })));
  }
}

function updateExports() {
  const select = state.hidden.size
    ? state.columns.map((c) => c.name).filter((n) => !state.hidden.has(n)).join(",") : null;
  const extra = select !== null ? { select } : {};
  $("export-jsonl").href = "api/" + tablePath("export?" + queryString(Object.assign({ format: "jsonl" }, extra)));
  $("export-csv").href = "api/" + tablePath("export?" + queryString(Object.assign({ format: "csv" }, extra)));
}

// -- the filter builder ----------------------------------------------------------------
function updateBuilderProps(columns) {
  const list = $("b-props");
  list.replaceChildren();
  for (const n of ["PartitionKey", "RowKey", "Timestamp"].concat(columns.map((c) => c.name))) {
    list.append(el("option", { value: n }));
  }
}

function base64ToHex(text) {
  const bytes = atob(text);
  let hex = "";
  for (let i = 0; i < bytes.length; i++) hex += bytes.charCodeAt(i).toString(16).padStart(2, "0");
  return hex;
}

function literal(type, text) {
  const problem = checkValue(type, text);
  if (problem) throw new Error(problem);
  switch (type) {
    case "Edm.String": return "'" + text.replace(/'/g, "''") + "'";
    case "Edm.Int32": return text.trim();
    case "Edm.Int64": return text.trim() + "L";
    case "Edm.Double": return /^[+-]?\d+$/.test(text.trim()) ? text.trim() + ".0" : text.trim();
    case "Edm.Boolean": return text.trim().toLowerCase();
    case "Edm.DateTime": return "datetime'" + text.trim() + "'";
    case "Edm.Guid": return "guid'" + text.trim() + "'";
    case "Edm.Binary": return "X'" + base64ToHex(text.trim()) + "'";
  }
  throw new Error("unknown type");
}

function addCondition() {
  alertText("");
  const prop = $("b-prop").value.trim();
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(prop)) { alertText("The builder needs a property name."); return; }
  let lit;
  try { lit = literal($("b-type").value, $("b-value").value); } catch (e) { alertText(e.message); return; }
  const cond = `${prop} ${$("b-op").value} ${lit}`;
  const current = $("filter-text").value.trim();
  $("filter-text").value = current ? `(${current}) ${$("b-join").value} ${cond}` : cond;
  state.tokens = [null];
  state.page = 0;
  loadEntities();
}

// -- value checks (the server checks again; these only explain early) ------------------
const RE = {
  int: /^[+-]?\d+$/,
  double: /^([+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)|NaN|Infinity|-Infinity)$/,
  datetime: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?Z$/,
  guid: /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/,
  base64: /^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
};
function checkValue(type, text) {
  const t = type === "Edm.String" ? text : text.trim();
  switch (type) {
    case "Edm.Int32":
    case "Edm.Int64": {
      if (!RE.int.test(t)) return "a whole number";
      const n = BigInt(t);
      const bits = type === "Edm.Int32" ? 31n : 63n;
      if (n < -(2n ** bits) || n > 2n ** bits - 1n) return `out of the ${type} range`;
      return "";
    }
    case "Edm.Double": return RE.double.test(t) ? "" : "a number, NaN, Infinity or -Infinity";
    case "Edm.Boolean": return /^(true|false)$/i.test(t) ? "" : "true or false";
    case "Edm.DateTime": return RE.datetime.test(t) ? "" : "YYYY-MM-DDThh:mm:ss.fffffffZ (UTC, to 100 ns)";
    case "Edm.Guid": return RE.guid.test(t) ? "" : "a GUID such as 0f8fad5b-d9cb-469f-a165-70867728950e";
    case "Edm.Binary": return RE.base64.test(t) ? "" : "base64";
    default: return "";
  }
}

const HINTS = { "Edm.Int32": "whole number, -2147483648 to 2147483647",
  "Edm.Int64": "whole number, -9223372036854775808 to 9223372036854775807",
  "Edm.Double": "number, NaN, Infinity or -Infinity", "Edm.Boolean": "",
  "Edm.DateTime": "UTC, seven fractional digits (100 ns)", "Edm.Guid": "8-4-4-4-12 hex digits",
  "Edm.Binary": "base64", "Edm.String": "" };

// -- one entity ------------------------------------------------------------------------
let propSeq = 0;
function valueEditor(type, value, id, hintId) {
  if (type === "Edm.Boolean") {
    const s = el("select", { id });
    for (const v of ["true", "false"]) s.append(el("option", { value: v, text: v }));
    s.value = value === "false" ? "false" : "true";
    return s;
  }
  if (type === "Edm.String" || type === "Edm.Binary") {
    const t = el("textarea", { id, rows: "1", spellcheck: "false", "aria-describedby": hintId });
    t.value = value;
    return t;
  }
  const input = el("input", { id, spellcheck: "false", "aria-describedby": hintId,
    inputmode: type === "Edm.Int32" || type === "Edm.Int64" ? "numeric" : "text" });
  input.value = value;
  return input;
}

function propRow(p) {
  const n = ++propSeq;
  const row = el("div", { class: "prop", "data-prop": String(n) });
  const name = el("input", { id: `p${n}-name`, spellcheck: "false", class: "p-name" });
  name.value = p.name;
  const type = el("select", { id: `p${n}-type`, class: "p-type" });
  for (const t of TYPES) type.append(el("option", { value: t, text: t }));
  type.value = p.type;
  const hint = el("span", { id: `p${n}-hint`, class: "hint", text: HINTS[p.type] || "" });
  const error = el("span", { id: `p${n}-err`, class: "err" });
  let editor = valueEditor(p.type, p.value, `p${n}-value`, `p${n}-hint`);
  editor.classList.add("p-value");
  const valueLabel = el("label", { for: `p${n}-value`, text: "Value" });
  type.addEventListener("change", () => {
    const next = valueEditor(type.value, editor.value, `p${n}-value`, `p${n}-hint`);
    next.classList.add("p-value");
    editor.replaceWith(next);
    editor = next;
    hint.textContent = HINTS[type.value] || "";
  });
  const remove = el("button", { type: "button", text: "Remove",
    "aria-label": "Remove property " + (p.name || "(new)"), onclick: () => row.remove() });
  row.append(el("label", { for: `p${n}-name`, text: "Name" }), name,
    el("label", { for: `p${n}-type`, text: "Type" }), type, valueLabel, editor, hint, error, remove);
  return row;
}

function renderEntity(entity) {
  state.entity = entity;
  const isNew = entity.etag === null;
  $("entity-title").textContent = isNew ? `New entity in ${state.table}`
    : `Entity ${entity.PartitionKey} / ${entity.RowKey} in ${state.table}`;
  $("e-pk").value = entity.PartitionKey;
  $("e-rk").value = entity.RowKey;
  $("e-pk").readOnly = !isNew;
  $("e-rk").readOnly = !isNew;
  $("e-meta").textContent = isNew ? "Not saved yet." : `Timestamp ${entity.Timestamp}, ETag ${entity.etag}`;
  $("delete-entity").hidden = isNew;
  $("reload-entity").hidden = isNew;
  const box = $("props");
  box.replaceChildren();
  for (const p of entity.properties) box.append(propRow(p));
}

function entityPath(pk, rk) {
  return tablePath("entity?" + new URLSearchParams({ pk, rk }).toString());
}

async function openEntity(pk, rk) {
  alertText("");
  try {
    const entity = await api("GET", entityPath(pk, rk));
    show("entity-view");
    renderEntity(entity);
  } catch (e) { failed(e); }
}

function newEntity() {
  alertText("");
  show("entity-view");
  renderEntity({ PartitionKey: "", RowKey: "", Timestamp: "", etag: null,
    properties: [{ name: "", type: "Edm.String", value: "" }] });
  $("e-pk").focus();
}

function collect() {
  const properties = [];
  let bad = null;
  for (const row of $("props").querySelectorAll(".prop")) {
    const name = row.querySelector(".p-name").value.trim();
    const type = row.querySelector(".p-type").value;
    const value = row.querySelector(".p-value").value;
    const err = row.querySelector(".err");
    const problem = name ? checkValue(type, value) : "a name";
    err.textContent = problem ? "Expected " + problem : "";
    if (problem && !bad) bad = row.querySelector(problem === "a name" ? ".p-name" : ".p-value");
    properties.push({ name, type, value: type === "Edm.String" ? value : value.trim() });
  }
  if (bad) { alertText("Some values are not valid; see the marked properties."); bad.focus(); return null; }
  return { PartitionKey: $("e-pk").value, RowKey: $("e-rk").value, properties };
}

async function saveEntity(event) {
  event.preventDefault();
  alertText("");
  const doc = collect();
  if (!doc) return;
  try {
    let saved;
    if (state.entity.etag === null) {
      saved = await api("POST", tablePath("entities"), doc);
      say(`Entity ${saved.PartitionKey} / ${saved.RowKey} inserted.`);
    } else {
      saved = await api("PUT", entityPath(state.entity.PartitionKey, state.entity.RowKey), doc,
        { "If-Match": state.entity.etag });
      say(`Entity ${saved.PartitionKey} / ${saved.RowKey} saved.`);
    }
    renderEntity(saved);
    $("entity-title").focus();
  } catch (e) {
    if (e.status === 412) {
      alertText("412 UpdateConditionNotSatisfied: the entity was changed since you opened it; " +
        "your edit was not saved. Reload to see the current version (your changes are still in the form).");
    } else { failed(e); }
  }
}

async function deleteEntity() {
  const e0 = state.entity;
  if (!window.confirm(`Delete entity ${e0.PartitionKey} / ${e0.RowKey}?`)) return;
  try {
    await api("DELETE", entityPath(e0.PartitionKey, e0.RowKey), undefined, { "If-Match": e0.etag });
    await loadEntities();
    say(`Entity ${e0.PartitionKey} / ${e0.RowKey} deleted.`);
  } catch (e) {
    if (e.status === 412) alertText("412 UpdateConditionNotSatisfied: the entity was changed since you opened it; it was not deleted.");
    else failed(e);
  }
}

// -- realism ---------------------------------------------------------------------------
async function changeRealism(change) {
  alertText("");
  const focused = document.activeElement ? document.activeElement.id : "";
  try { renderRealism(await api("POST", "realism", change)); say("Realism settings changed."); }
  catch (e) { failed(e); return; }
  // the controls were rebuilt: the keyboard stays where it was
  const again = focused ? $(focused) : null;
  if (again) again.focus(); else $("realism-title").focus();
}

function toggle(id, label, checked, onchange) {
  const box = el("input", { type: "checkbox", id });
  box.checked = checked;
  box.addEventListener("change", () => onchange(box.checked));
  return el("div", { class: "row" }, box, el("label", { for: id, text: label }));
}

function off(text) { return el("p", { class: "hint", text }); }

function faultCounts(r) {
  const counts = Object.entries(r.faults.counters).map(([k, v]) => `${k}: ${v}`).join(", ");
  return "Injected so far: " + (counts || "none");
}

function throttleCounts(r) {
  const refused = Object.entries(r.throttle.throttled).map(([k, v]) => `${k}: ${v}`).join(", ");
  return `Admitted ${r.throttle.admitted}; refused ${refused || "none"}; timeouts ${r.throttle.timeouts}`;
}

function realismShape(r) {
  return JSON.stringify([r.faults.configured && r.faults.enabled, r.faults.rules && r.faults.rules.map((x) => x.spec),
    r.throttle.configured && [r.throttle.enabled, r.throttle.spec], r.partitions]);
}

// Live: the counts change in place; the controls are rebuilt only when the settings
// themselves changed and the focus is not inside the view (a keyboard user keeps their place).
async function pollRealism() {
  let r;
  try { r = await api("GET", "realism"); } catch (e) { return; }
  const busy = ["faults", "throttle", "partitions"].some((id) => $(id).contains(document.activeElement));
  if (realismShape(r) !== state.realismShape && !busy) {
    renderRealism(r);
    return;
  }
  if (r.faults.configured && $("fault-counts")) {
    $("fault-counts").textContent = faultCounts(r);
    const stats = $("faults").querySelectorAll(".rule-stats");
    r.faults.rules.forEach((rule, i) => {
      if (stats[i]) stats[i].textContent = `(seen ${rule.seen}, injected ${rule.injected}) `;
    });
  }
  if (r.throttle.configured && $("throttle-counts")) $("throttle-counts").textContent = throttleCounts(r);
}

function renderRealism(r) {
  state.realismShape = realismShape(r);
  const view = $("realism-view");
  view.dataset.renders = String(Number(view.dataset.renders || "0") + 1);
  const f = $("faults");
  f.replaceChildren();
  if (!r.faults.configured) f.append(off("Off: the stub runs without fault injection (azt-stub --fault ...)."));
  else {
    f.append(toggle("faults-enabled", "Inject faults", r.faults.enabled, (v) => changeRealism({ faults: { enabled: v } })));
    const list = el("ul", {});
    for (const rule of r.faults.rules) {
      list.append(el("li", {}, rule.spec + " ",
        el("span", { class: "rule-stats", text: `(seen ${rule.seen}, injected ${rule.injected}) ` }),
        el("button", { type: "button", text: "Remove", "aria-label": "Remove fault rule " + rule.spec,
          onclick: () => changeRealism({ faults: { remove: rule.index } }) })));
    }
    if (!r.faults.rules.length) list.append(el("li", { text: "No rules." }));
    const spec = el("input", { id: "fault-spec", placeholder: "busy:20%@writes", spellcheck: "false" });
    const form = el("form", { class: "row" }, el("label", { for: "fault-spec", text: "New rule (--fault syntax)" }), spec,
      el("button", { type: "submit", id: "fault-add", text: "Add rule" }),
      el("button", { type: "button", id: "fault-clear", text: "Remove all rules", onclick: () => changeRealism({ faults: { clear: true } }) }));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); changeRealism({ faults: { add: spec.value } }); });
    f.append(list, form, el("p", { class: "counts", id: "fault-counts", text: faultCounts(r) }));
  }
  const t = $("throttle");
  t.replaceChildren();
  if (!r.throttle.configured) t.append(off("Off: the stub runs without throttling (azt-stub --throttle ...)."));
  else {
    t.append(toggle("throttle-enabled", "Throttle", r.throttle.enabled, (v) => changeRealism({ throttle: { enabled: v } })));
    const spec = el("input", { id: "throttle-spec", class: "wide", spellcheck: "false" });
    spec.value = r.throttle.spec;
    const form = el("form", { class: "row" }, el("label", { for: "throttle-spec", text: "Limits" }), spec,
      el("button", { type: "submit", id: "throttle-apply", text: "Apply limits" }));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); changeRealism({ throttle: { spec: spec.value } }); });
    t.append(form, el("p", { class: "counts", id: "throttle-counts", text: throttleCounts(r) }));
  }
  const p = $("partitions");
  p.replaceChildren();
  if (!r.partitions.configured) p.append(off("Off: the stub runs without a partition layout (azt-stub --range-boundary/--scan-budget/--partition-pages)."));
  else {
    const bounds = el("input", { id: "range-bounds", class: "wide", spellcheck: "false" });
    bounds.value = r.partitions.boundaries.join(",");
    const budget = el("input", { id: "scan-budget", inputmode: "numeric" });
    budget.value = r.partitions.scan_budget === null ? "" : String(r.partitions.scan_budget);
    const pages = el("input", { type: "checkbox", id: "partition-pages" });
    pages.checked = r.partitions.partition_pages;
    const form = el("form", { class: "row" },
      el("span", {}, el("label", { for: "range-bounds", text: "Range boundaries (comma-separated PartitionKeys) " }), bounds),
      el("span", {}, el("label", { for: "scan-budget", text: "Scan budget (empty: none) " }), budget),
      el("span", {}, pages, el("label", { for: "partition-pages", text: " A page per partition" })),
      el("button", { type: "submit", id: "layout-apply", text: "Apply layout" }));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const b = budget.value.trim();
      if (b && !/^\d+$/.test(b)) { alertText("The scan budget is a whole number."); return; }
      changeRealism({ partitions: { boundaries: bounds.value.split(",").map((s) => s.trim()).filter((s) => s),
        scan_budget: b ? parseInt(b, 10) : null, partition_pages: pages.checked } });
    });
    p.append(form);
  }
}

async function loadRealism() {
  alertText("");
  show("realism-view");
  try { renderRealism(await api("GET", "realism")); } catch (e) { failed(e); }
  state.timers.push(setInterval(pollRealism, 2000));
}

// -- recent requests -------------------------------------------------------------------
async function pollRequests() {
  let data;
  try { data = await api("GET", "requests?since=" + state.lastSeq); } catch (e) { failed(e); return; }
  const body = $("requests-grid").tBodies[0];
  for (const r of data.requests) {
    const time = new Date(r.time * 1000).toISOString().slice(11, 23);
    body.prepend(el("tr", { role: "row" },
      ...[String(r.seq), time, r.method, r.path, String(r.status), r.error, String(r.ms)]
        .map((v) => el("td", { role: "gridcell", class: "value", text: v }))));
  }
  while (body.rows.length > 300) body.deleteRow(body.rows.length - 1);
  state.lastSeq = data.last;
}

function loadRequests() {
  alertText("");
  show("requests-view");
  pollRequests();
  state.timers.push(setInterval(() => { if ($("requests-live").checked) pollRequests(); }, 1000));
}

// -- keyboard: arrow keys move between rows of a grid ----------------------------------
function gridKeys(event) {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  const cell = event.target.closest("td");
  const row = event.target.closest("tr");
  if (!cell || !row) return;
  const rows = Array.from(row.parentElement.rows);
  const next = rows[rows.indexOf(row) + (event.key === "ArrowDown" ? 1 : -1)];
  if (!next) return;
  const target = next.cells[cell.cellIndex];
  const focusable = target && target.querySelector("button, a, input, select, textarea");
  if (focusable) { focusable.focus(); event.preventDefault(); }
}

// -- wiring ----------------------------------------------------------------------------
document.addEventListener("DOMContentLoaded", () => {
  for (const t of TYPES) $("b-type").append(el("option", { value: t, text: t }));
  $("signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    alertText("");
    try {
      const session = await api("POST", "signin", { account: $("signin-account").value, key: $("signin-key").value });
      $("signin-key").value = "";
      signedIn(session);
    } catch (e) { failed(e); }
  });
  $("signout").addEventListener("click", async () => {
    try { await api("POST", "signout"); } catch (e) { /* gone already */ }
    showSignIn();
  });
  $("nav-tables").addEventListener("click", loadTables);
  $("nav-realism").addEventListener("click", loadRealism);
  $("nav-requests").addEventListener("click", loadRequests);
  $("refresh-tables").addEventListener("click", loadTables);
  $("refresh-realism").addEventListener("click", loadRealism);
  $("create-table-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    alertText("");
    try {
      const t = await api("POST", "tables", { name: $("new-table").value });
      say(`Table ${t.name} created.`);
      $("new-table").value = "";
    } catch (e) { failed(e); return; }
    loadTables();
  });
  $("filter-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.tokens = [null];
    state.page = 0;
    loadEntities();
  });
  $("b-add").addEventListener("click", addCondition);
  $("b-clear").addEventListener("click", () => { $("filter-text").value = ""; state.tokens = [null]; state.page = 0; loadEntities(); });
  $("next-page").addEventListener("click", () => {
    if (!state.next) return;
    state.tokens[state.page + 1] = state.next;
    state.page += 1;
    loadEntities();
  });
  $("prev-page").addEventListener("click", () => {
    if (state.page === 0) return;
    state.page -= 1;
    loadEntities();
  });
  $("back-to-tables").addEventListener("click", loadTables);
  $("new-entity").addEventListener("click", newEntity);
  $("add-prop").addEventListener("click", () => {
    const row = propRow({ name: "", type: "Edm.String", value: "" });
    $("props").append(row);
    row.querySelector(".p-name").focus();
  });
  $("entity-form").addEventListener("submit", saveEntity);
  $("reload-entity").addEventListener("click", () => openEntity(state.entity.PartitionKey, state.entity.RowKey));
  $("delete-entity").addEventListener("click", deleteEntity);
  $("back-to-entities").addEventListener("click", loadEntities);
  $("requests-clear").addEventListener("click", () => $("requests-grid").tBodies[0].replaceChildren());
  for (const id of ["tables-grid", "entities-grid"]) $(id).addEventListener("keydown", gridKeys);
  start();
});
