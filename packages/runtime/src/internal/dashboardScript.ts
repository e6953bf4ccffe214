/**
 * The second half of the dashboard's script: what the page knows and how it learns it. It follows
 * `/events` with `fetch` rather than `EventSource`, so it can send the bearer token (given once
 * as `#token=...`), and resumes from the last id it saw whenever the stream drops — including
 * across a Toolvisor restart. A snapshot fills the event log with the last hour; `/stats` is
 * polled for the charts; a toolset's drawer reads `/toolsets/NAME`. Buttons offer only what the
 * state allows, and stopping asks first.
 */
export const script = `
const rows = new Map();
const histories = new Map();
const policies = new Map();
const cards = new Map();
const entries = [];
const logged = new Map();
const pending = new Set();
let info = { agent: "", config: null, startedAt: null };
let stats = { toolsets: {} };
let span = Number(sessionStorage.getItem("toolvisor-window")) || 15 * minute;
let lastId;
let order = "";
let drawerFor = null;
let inspection = null;
let token = sessionStorage.getItem("toolvisor-token") || undefined;
const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromHash) { token = fromHash; sessionStorage.setItem("toolvisor-token", fromHash); history.replaceState(null, "", location.pathname); }
const auth = () => (token ? { authorization: "Bearer " + token } : {});
const $ = (selector) => document.querySelector(selector);
const allowed = {
  start: ["Stopped", "Failed"],
  restart: ["Ready", "Degraded", "Restarting"],
  stop: ["Starting", "Ready", "Degraded", "Restarting"]
};

function record(name, state, at, error, from) {
  const h = histories.get(name) || [];
  const last = h[h.length - 1];
  if (!last || last.state !== state) h.push({ state, at, error: error || undefined, from });
  while (h.length > 1 && h[1].at < Date.now() - hour) h.shift();
  histories.set(name, h);
}

/** One line of the event log; \`key\` makes a transition seen twice (history, then live) count once. */
function note(at, text, tone, key) {
  if (key) { if (logged.has(key)) return; logged.set(key, at); }
  entries.push({ at, text, tone });
}

function noteTransition(name, from, state, at, error, pid) {
  const text = name + " " + (from ? from + " → " : "") + state + (pid ? " (pid " + pid + ")" : "") + (error ? "  " + error.tag + ": " + error.message : "");
  note(at, text, state === "Failed" || state === "Restarting" || error ? "bad" : "", name + "|" + at + "|" + state);
}

function renderLog() {
  entries.sort((a, b) => b.at - a.at);
  entries.splice(300);
  // A key outlives its line by an hour at most: a page kept open for days stays small.
  for (const [key, at] of logged) if (at < Date.now() - 2 * hour) logged.delete(key);
  $("#log").replaceChildren(...entries.map((entry) => {
    const li = el("li", entry.tone || "");
    li.append(timeTag(entry.at), entry.text);
    return li;
  }));
}

function card(name) {
  let c = cards.get(name);
  if (c) return c;
  const root = el("article", "ts");
  root.dataset.toolset = name;
  const head = el("div", "head");
  const open = el("button", "name", name);
  open.type = "button";
  open.title = printable("Details of " + name);
  open.onclick = () => openDrawer(name);
  c = { root, kind: el("span", "kind"), state: el("span", "state"), facts: el("span", "facts"), budget: el("span", "budget"), buttons: {}, error: el("p", "error"), timeline: el("div", ""), charts: el("div", "charts") };
  const actions = el("span", "actions");
  for (const [action, label] of [["start", "Start"], ["restart", "Restart"], ["stop", "Stop"]]) {
    const button = el("button", action === "stop" ? "danger" : "", label);
    button.type = "button";
    button.dataset.action = action;
    button.onclick = () => (action === "stop" ? confirmStop(name) : control(name, action));
    c.buttons[action] = button;
    actions.append(button);
  }
  head.append(open, c.kind, c.state, c.facts, c.budget, actions);
  root.append(head, c.error, c.timeline, c.charts);
  cards.set(name, c);
  return c;
}

function update(name, now) {
  const row = rows.get(name);
  if (!row) return;
  const c = card(name);
  c.root.dataset.state = row.state;
  c.root.dataset.pid = row.pid === null ? "" : String(row.pid);
  c.kind.textContent = printable(row.kind);
  c.state.textContent = printable(row.state);
  c.state.className = "state s-" + row.state;
  c.facts.textContent = printable([row.pid === null ? null : "pid " + row.pid, row.tools === null ? null : row.tools + " tools", "since " + clock(Date.parse(row.at))].filter(Boolean).join(" · "));
  const b = budget(row, policies.get(name));
  c.budget.textContent = printable(b.text);
  c.budget.classList.toggle("spent", b.spent);
  for (const [action, button] of Object.entries(c.buttons)) button.disabled = pending.has(name) || !allowed[action].includes(row.state);
  c.error.textContent = printable(row.error ? row.error.tag + ": " + row.error.message : "");
  c.error.hidden = !row.error;
  c.timeline.replaceChildren(timeline(name, histories.get(name) || [], now, span));
  c.charts.replaceChildren(...charts(stats.toolsets[name], stats.bucketMillis || minute));
}

function renderHeader() {
  $("#title").textContent = printable([info.config, info.agent ? "agent " + info.agent : null].filter(Boolean).join(" · "));
  $("#uptime").textContent = printable(info.startedAt ? "up " + duration(Date.now() - Date.parse(info.startedAt)) : "");
  const counts = new Map();
  for (const row of rows.values()) counts.set(row.state, (counts.get(row.state) || 0) + 1);
  $("#counts").replaceChildren(...states.filter((s) => counts.has(s)).map((s) => {
    const chip = el("span", "chip");
    chip.dataset.state = s;
    chip.append(el("i", "dot b-" + s), counts.get(s) + " " + s);
    return chip;
  }));
}

function render() {
  const now = Date.now();
  renderHeader();
  const names = [...rows.keys()];
  for (const name of cards.keys()) if (!rows.has(name)) cards.delete(name);
  for (const name of names) update(name, now);
  if (names.join("\\n") !== order) {
    order = names.join("\\n");
    $("#toolsets").replaceChildren(...names.map((name) => card(name).root));
  }
  renderLog();
  renderDrawer();
}

function apply(event, data) {
  if (event === "snapshot") {
    rows.clear();
    info = { agent: data.agent || "", config: data.config || null, startedAt: data.startedAt || null };
    for (const [name, policy] of Object.entries(data.policies || {})) policies.set(name, policy);
    for (const [name, list] of Object.entries(data.timelines || {})) {
      const h = list.map((e) => ({ state: e.state, at: Date.parse(e.at), error: e.error, from: e.from }));
      histories.set(name, h);
      for (const e of h) if (e.at >= Date.now() - hour) noteTransition(name, e.from, e.state, e.at, e.error);
    }
    for (const row of data.toolsets) { rows.set(row.toolset, row); record(row.toolset, row.state, Date.parse(row.at), row.error); }
    note(Date.now(), "connected: snapshot of " + data.toolsets.length + " toolsets (" + data.toolsets.map((r) => r.toolset + " " + r.state).join(", ") + ")");
    pollStats();
  } else if (event === "transition") {
    if (!policies.has(data.toolset)) refreshInspection(data.toolset);
    rows.set(data.toolset, data);
    record(data.toolset, data.state, Date.parse(data.at), data.error, data.from);
    noteTransition(data.toolset, data.from, data.state, Date.parse(data.at), data.error, data.pid);
  } else if (event === "catalog") {
    note(Date.now(), "catalog: " + data.tools + " tools" + (data.complete ? "" : " (incomplete)"), "quiet");
  }
  render();
}

function frame(text) {
  let id, event = "message", data = "";
  for (const line of text.split("\\n")) {
    if (line.startsWith("id: ")) id = Number(line.slice(4));
    else if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (data === "") return;
  if (id !== undefined) lastId = id;
  apply(event, JSON.parse(data));
}

function link(state, text) {
  $("#link").className = state;
  $("#link").textContent = printable(text);
}

async function follow() {
  for (;;) {
    let wait = 1000;
    try {
      const query = lastId === undefined ? "" : "?lastEventId=" + lastId;
      const response = await fetch("events" + query, { headers: auth(), cache: "no-store" });
      if (response.status === 401) { link("down", "needs a token: open this page with #token=…"); wait = 5000; throw new Error("401"); }
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      link("up", "live");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\\n\\n")) >= 0) { frame(buffer.slice(0, end)); buffer = buffer.slice(end + 2); }
      }
      link("down", "reconnecting…");
    } catch (error) {
      if (wait === 1000) link("down", "reconnecting…");
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function pollStats() {
  try {
    const response = await fetch("stats", { headers: auth(), cache: "no-store" });
    if (response.ok) { stats = await response.json(); render(); }
  } catch (error) {
    // the feed reports the connection; the charts keep what they had
  }
}

async function control(name, action) {
  pending.add(name);
  render();
  try {
    const response = await fetch("toolsets/" + encodeURIComponent(name) + "/" + action, { method: "POST", headers: auth() });
    const body = await response.json().catch(() => ({}));
    const why = body.status && body.status.error ? body.error + ": " + body.status.error.message : body.error || "";
    note(Date.now(), action + " " + name + ": " + (response.ok ? "ok" : "failed (" + response.status + ") " + why), response.ok ? "" : "bad");
  } catch (error) {
    note(Date.now(), action + " " + name + ": no answer (" + error.message + ")", "bad");
  } finally {
    pending.delete(name);
    render();
  }
}

function confirmStop(name) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = printable("Stop " + name + "? Its server is shut down and its tools leave the agent's catalog until it is started again.");
  dialog.returnValue = "";
  dialog.onclose = () => { if (dialog.returnValue === "stop") control(name, "stop"); };
  dialog.showModal();
  $("#confirm-cancel").focus();
}

async function refreshInspection(name) {
  try {
    const response = await fetch("toolsets/" + encodeURIComponent(name), { headers: auth(), cache: "no-store" });
    if (!response.ok) return;
    const found = await response.json();
    policies.set(name, found.policy);
    if (drawerFor === name) inspection = found;
    render();
  } catch (error) {
    // shown again on the next refresh
  }
}

function openDrawer(name) {
  drawerFor = name;
  inspection = null;
  $("#drawer").hidden = false;
  render();
  refreshInspection(name);
  $("#d-close").focus();
}

function closeDrawer() {
  drawerFor = null;
  $("#drawer").hidden = true;
}

function definitions(pairs) {
  const dl = el("dl", "");
  for (const [term, value] of pairs) dl.append(el("dt", "", term), el("dd", "", value));
  return dl;
}

function policyPairs(p) {
  if (!p) return [["policy", "loading…"]];
  const ms = (v) => (v === null ? "none" : duration(v));
  return [
    ["restart", p.restart],
    ["max restarts", p.maxRestarts < 0 ? "no limit" : String(p.maxRestarts)],
    ["backoff", ms(p.backoff.initialMs) + " → " + ms(p.backoff.maxMs) + ", ×" + p.backoff.multiplier + (p.backoff.jitter ? ", ±" + Math.round(p.backoff.jitter * 100) + " %" : "")],
    ["budget resets", "after " + ms(p.backoff.resetAfterMs) + " Ready"],
    ["startup timeout", ms(p.startupTimeoutMs)],
    ["call timeout", ms(p.callTimeoutMs)],
    ["required", p.required ? "yes" : "no"],
    ["health probe", p.health ? "every " + ms(p.health.intervalMs) + ", " + p.health.failures + " failures restart it" : "none"]
  ];
}

function renderDrawer() {
  if (!drawerFor) return;
  const name = drawerFor;
  const row = rows.get(name);
  $("#d-name").textContent = printable(name);
  $("#d-state").textContent = printable(row ? row.state : "gone");
  $("#d-state").className = "state s-" + (row ? row.state : "Stopped");
  $("#d-policy").replaceChildren(definitions(policyPairs(inspection ? inspection.policy : policies.get(name))));
  const tools = inspection ? inspection.tools : null;
  $("#d-tools-count").textContent = printable(tools && tools.names.length > 0 ? "(" + tools.names.length + (tools.complete ? ")" : ", the last listed)") : "");
  const none = tools && tools.names.length === 0 ? (tools.complete ? "none" : "not listed while " + (row ? row.state : "gone")) : "loading…";
  $("#d-tools").replaceChildren(...(tools && tools.names.length > 0 ? tools.names.map((t) => el("span", "", t)) : [el("i", "muted", none)]));
  const h = (histories.get(name) || []).slice(-30).reverse();
  $("#d-transitions").replaceChildren(...h.map((e) => {
    const li = el("li", "");
    li.append(timeTag(e.at), el("span", "state s-" + e.state, e.state));
    if (e.error) li.append(el("span", "why", e.error.tag + ": " + e.error.message));
    return li;
  }));
  const stderr = inspection ? inspection.stderr : undefined;
  $("#d-stderr").textContent = printable(!inspection ? "loading…" : stderr === null ? "a remote server: no stderr to show" : stderr.length === 0 ? "nothing on stderr" : stderr.join("\\n"));
}

function setWindow(ms) {
  span = ms;
  sessionStorage.setItem("toolvisor-window", String(ms));
  for (const button of document.querySelectorAll(".window button")) button.setAttribute("aria-pressed", String(Number(button.dataset.window) === ms));
  render();
}

for (const button of document.querySelectorAll(".window button")) button.onclick = () => setWindow(Number(button.dataset.window));
$("#legend").append(...states.map((s) => { const item = el("span", ""); item.append(el("i", "swatch b-" + s), s); return item; }));
const crashKey = el("span", "");
crashKey.append(el("i", "swatch tick"), "restart");
$("#legend").append(crashKey);
$("#confirm-stop").onclick = () => $("#confirm").close("stop");
$("#confirm-cancel").onclick = () => $("#confirm").close("cancel");
$("#d-close").onclick = closeDrawer;
document.addEventListener("keydown", (e) => { if (e.key === "Escape" && drawerFor && !$("#confirm").open) closeDrawer(); });
setWindow(span);
setInterval(renderHeader, 1000);
setInterval(render, 5000);
setInterval(pollStats, 10000);
setInterval(() => drawerFor && refreshInspection(drawerFor), 5000);
follow();
`
