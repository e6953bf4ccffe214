/**
 * The dashboard at `GET /`: one page a person keeps open, in plain HTML, CSS and JS served by the
 * process itself (no build chain, no CDN, works offline). It follows `/events` with `fetch` rather
 * than `EventSource`, so it can send the bearer token (given once as `#token=...`), and resumes
 * from the last id it saw whenever the stream drops — including across a Toolvisor restart.
 */
import * as NodeCrypto from "node:crypto"

const style = `
:root { color-scheme: light dark; font: 14px/1.4 system-ui, sans-serif; }
body { margin: 1.5rem; }
h1 { font-size: 1.3rem; margin: 0 0 .5rem; }
#link { font-size: .85rem; }
#link.up::before { content: "● "; color: #2a2; }
#link.down::before { content: "● "; color: #c33; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #8884; vertical-align: middle; }
td.state { font-weight: 600; }
.s-Ready { color: #1a7f37; } .s-Starting { color: #0969da; } .s-Restarting { color: #a0a; }
.s-Degraded { color: #b08800; } .s-Failed { color: #cf222e; } .s-Stopped { color: #888; }
.timeline { display: flex; width: 24rem; height: .9rem; background: #8882; border-radius: 2px; overflow: hidden; }
.timeline span { height: 100%; }
.b-Ready { background: #2da44e; } .b-Starting { background: #54aeff; } .b-Restarting { background: #c297ff; }
.b-Degraded { background: #d4a72c; } .b-Failed { background: #fa4549; } .b-Stopped { background: #afb8c1; }
.error { color: #cf222e; font-size: .85rem; max-width: 28rem; }
button { font: inherit; margin-right: .3rem; }
#log { list-style: none; padding: 0; font: 12px/1.5 ui-monospace, monospace; max-height: 20rem; overflow: auto; }
`

const script = `
"use strict";
const hour = 3600 * 1000;
const rows = new Map();
const histories = new Map();
let lastId;
let token = sessionStorage.getItem("toolvisor-token") || undefined;
const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromHash) { token = fromHash; sessionStorage.setItem("toolvisor-token", fromHash); history.replaceState(null, "", location.pathname); }
const auth = () => (token ? { authorization: "Bearer " + token } : {});
const $ = (selector) => document.querySelector(selector);

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function record(name, state, at) {
  const h = histories.get(name) || [];
  const last = h[h.length - 1];
  if (!last || last.state !== state) h.push({ state, at });
  while (h.length > 1 && h[1].at < Date.now() - hour) h.shift();
  histories.set(name, h);
}

function timeline(name) {
  const div = document.createElement("div");
  div.className = "timeline";
  div.dataset.toolset = name;
  const now = Date.now();
  const h = histories.get(name) || [];
  h.forEach((entry, i) => {
    const from = Math.max(entry.at, now - hour);
    const to = i + 1 < h.length ? h[i + 1].at : now;
    if (to <= from) return;
    const span = document.createElement("span");
    span.className = "b-" + entry.state;
    span.dataset.state = entry.state;
    span.style.width = Math.max(0.3, ((to - from) / hour) * 100) + "%";
    span.title = entry.state + " from " + new Date(entry.at).toLocaleTimeString();
    div.append(span);
  });
  return div;
}

function render() {
  const body = $("#toolsets");
  body.replaceChildren();
  for (const row of rows.values()) {
    const tr = document.createElement("tr");
    tr.dataset.toolset = row.toolset;
    tr.append(cell(row.toolset), cell(row.kind), cell(row.state, "state s-" + row.state));
    tr.append(cell(row.pid === null ? "-" : String(row.pid), "pid"), cell(row.tools === null ? "-" : String(row.tools)));
    tr.append(cell(String(row.restarts), "restarts"));
    const td = document.createElement("td");
    td.append(timeline(row.toolset));
    tr.append(td);
    tr.append(cell(row.error ? row.error.tag + ": " + row.error.message : "", "error"));
    const actions = document.createElement("td");
    for (const action of ["restart", "stop", "start"]) {
      const button = document.createElement("button");
      button.textContent = action;
      button.dataset.action = action;
      button.onclick = () => control(row.toolset, action);
      actions.append(button);
    }
    tr.append(actions);
    body.append(tr);
  }
}

function log(text) {
  const li = document.createElement("li");
  li.textContent = new Date().toLocaleTimeString() + "  " + text;
  $("#log").prepend(li);
  while ($("#log").children.length > 300) $("#log").lastChild.remove();
}

function apply(event, data) {
  if (event === "snapshot") {
    rows.clear();
    for (const [name, entries] of Object.entries(data.timelines || {})) {
      histories.set(name, entries.map((entry) => ({ state: entry.state, at: Date.parse(entry.at) })));
    }
    for (const row of data.toolsets) { rows.set(row.toolset, row); record(row.toolset, row.state, Date.parse(row.at)); }
    log("snapshot: " + data.toolsets.map((r) => r.toolset + " " + r.state).join(", "));
  } else if (event === "transition") {
    rows.set(data.toolset, data);
    record(data.toolset, data.state, Date.parse(data.at));
    log(data.toolset + " " + data.from + " → " + data.state + (data.pid ? " (pid " + data.pid + ")" : "") + (data.error ? " " + data.error.tag + ": " + data.error.message : ""));
  } else if (event === "catalog") {
    log("catalog: " + data.tools + " tools" + (data.complete ? "" : " (incomplete)"));
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

async function follow() {
  for (;;) {
    try {
      const query = lastId === undefined ? "" : "?lastEventId=" + lastId;
      const response = await fetch("events" + query, { headers: auth(), cache: "no-store" });
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      $("#link").className = "up";
      $("#link").textContent = "live";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\\n\\n")) >= 0) { frame(buffer.slice(0, end)); buffer = buffer.slice(end + 2); }
      }
    } catch (error) {
      // fall through to reconnect
    }
    $("#link").className = "down";
    $("#link").textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function control(name, action) {
  const response = await fetch("toolsets/" + encodeURIComponent(name) + "/" + action, { method: "POST", headers: auth() });
  const body = await response.json().catch(() => ({}));
  log(action + " " + name + ": " + (response.ok ? "ok" : "failed (" + response.status + ") " + (body.status && body.status.error ? body.error + ": " + body.status.error.message : body.error || "")));
}

setInterval(render, 5000);
follow();
`

/** The whole page, one response with its style and script inline. */
export const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Toolvisor</title>
<style>${style}</style>
</head>
<body>
<h1>Toolvisor <span id="link" class="down">connecting…</span></h1>
<table>
<thead><tr><th>Toolset</th><th>Kind</th><th>State</th><th>PID</th><th>Tools</th><th>Restarts</th><th>Last hour</th><th>Last error</th><th></th></tr></thead>
<tbody id="toolsets"></tbody>
</table>
<h2>Events</h2>
<ul id="log"></ul>
<script>${script}</script>
</body>
</html>
`

const sha256 = (text: string) => `'sha256-${NodeCrypto.createHash("sha256").update(text).digest("base64")}'`

/**
 * The page's Content-Security-Policy: its own inline style and script (by hash, so no injected
 * markup could run), requests to this server only, and no framing by any other page.
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  `script-src ${sha256(script)}`,
  `style-src ${sha256(style)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")
