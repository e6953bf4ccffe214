/**
 * The first half of the dashboard's script: pure drawing helpers, from the feed's data to DOM
 * nodes — times, durations, the restart budget, a toolset's state timeline with its legend (where
 * a crash loop is named as one), and the small call charts, drawn as SVG bars by hand (a
 * charting library would weigh more than the page it draws three bar charts in). Everything a server said is set as
 * text, never parsed as markup.
 */
export const view = `
"use strict";
const states = ["Ready", "Starting", "Degraded", "Restarting", "Failed", "Stopped"];
const minute = 60 * 1000;
const hour = 60 * minute;
/** Restarts closer together than this belong to one crash loop. */
const loopGap = 2 * minute;
const svgNs = "http://www.w3.org/2000/svg";

/**
 * Text as the page shows it: what reorders or hides text (bidi controls, zero-width characters,
 * tags, separators, controls but line feed and tab) as \\u escapes, as the CLI shows it, so a
 * server's name or error reads as what it is.
 */
const hiding = /(?![\\n\\t])[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}]/gu;
function printable(text) {
  return String(text).replace(hiding, (c) => "\\\\u" + c.codePointAt(0).toString(16).padStart(4, "0"));
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = printable(text);
  return node;
}

function svg(tag, attributes) {
  const node = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** HH:MM:SS in UTC, as the CLI prints its times. */
function clock(ms) {
  return new Date(ms).toISOString().slice(11, 19);
}

function timeTag(ms) {
  const node = el("time", "", clock(ms));
  node.dateTime = new Date(ms).toISOString();
  return node;
}

function duration(ms) {
  if (ms > 0 && ms < 950) return Math.round(ms) + " ms";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
  const h = Math.floor(m / 60);
  if (h < 48) return h + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
  return Math.floor(h / 24) + " d " + (h % 24) + " h";
}

function number(value) {
  if (value >= 100) return String(Math.round(value));
  return value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

function millis(value) {
  if (value >= 1000) return number(value / 1000) + " s";
  return (value >= 10 ? String(Math.round(value)) : value.toFixed(1)) + " ms";
}

/** The restart budget: what the policy allows, what this episode has used, and when it resets. */
function budget(row, policy) {
  if (!policy) return { text: "", spent: false };
  const failed = row.state === "Failed";
  if (policy.restart === "never") {
    return { text: failed ? "gave up (restart: never)" : "no automatic restarts", spent: failed };
  }
  const reset = policy.backoff.resetAfterMs === null ? "" : " · resets after " + duration(policy.backoff.resetAfterMs) + " Ready";
  if (policy.maxRestarts < 0) return { text: "restarts " + row.attempt + ", no limit" + reset, spent: false };
  if (failed) return { text: "gave up after " + row.attempt + " of " + policy.maxRestarts + " restarts", spent: true };
  return { text: "restarts " + row.attempt + " of " + policy.maxRestarts + reset, spent: row.attempt >= policy.maxRestarts };
}

/** The pieces of a history inside the window: each state entered, from when to when. */
function pieces(history, now, span) {
  const start = now - span;
  const out = [];
  history.forEach((entry, i) => {
    const next = i + 1 < history.length ? history[i + 1].at : now;
    const from = Math.max(entry.at, start);
    if (next < start || (next <= from && i + 1 < history.length)) return;
    out.push({ state: entry.state, at: entry.at, from, to: Math.max(from, next), error: entry.error, entered: entry.at >= start });
  });
  return out;
}

/** The latest run of restarts each within \`loopGap\` of the last, when there were three or more. */
function crashLoop(history, now, span) {
  const restarts = history.filter((e) => e.state === "Restarting" && e.at >= now - span);
  let run = [];
  for (const entry of restarts) {
    if (run.length > 0 && entry.at - run[run.length - 1].at > loopGap) run = [];
    run.push(entry);
  }
  if (run.length < 3) return undefined;
  const first = run[0].at;
  const last = run[run.length - 1].at;
  const end = history.find((e) => e.at > last && (e.state === "Failed" || e.state === "Stopped"));
  const gaveUp = end !== undefined && end.state === "Failed" && end.at - last <= loopGap ? end.at : undefined;
  return { count: run.length, first, last, gaveUp };
}

function axis(...labels) {
  const line = el("div", "axis");
  line.append(...labels.map((label) => el("span", "", label)));
  return line;
}

function timeline(name, history, now, span) {
  const box = el("div", "timeline");
  const track = el("div", "track");
  track.dataset.toolset = name;
  track.setAttribute("role", "img");
  for (const piece of pieces(history, now, span)) {
    const seg = el("div", "seg b-" + piece.state);
    seg.dataset.state = piece.state;
    seg.style.left = ((piece.from - (now - span)) / span) * 100 + "%";
    seg.style.width = ((piece.to - piece.from) / span) * 100 + "%";
    seg.title = printable(piece.state + " at " + clock(piece.at) + " for " + duration(piece.to - piece.at) + (piece.error ? " — " + piece.error.tag + ": " + piece.error.message : ""));
    track.append(seg);
    if (piece.state === "Restarting" && piece.entered) {
      const tick = el("div", "crash");
      tick.style.left = ((piece.at - (now - span)) / span) * 100 + "%";
      track.append(tick);
    }
  }
  const loop = crashLoop(history, now, span);
  if (loop) {
    // The loop's extent under the track, so it stands out at any zoom.
    const band = el("div", "band");
    const left = Math.max(0, (loop.first - (now - span)) / span);
    band.style.left = left * 100 + "%";
    band.style.width = (((loop.gaveUp || loop.last) - loop.first) / span) * 100 + "%";
    band.title = printable("crash loop: " + loop.count + " restarts");
    track.append(band);
  }
  box.append(track, axis("−" + duration(span), "−" + duration(span / 2), "now"), summary(name, history, now, span));
  return box;
}

/** The timeline's legend: each state's share of the window, how often it was entered, and any crash loop. */
function summary(name, history, now, span) {
  const line = el("div", "summary");
  line.dataset.toolset = name;
  const totals = new Map();
  const all = pieces(history, now, span);
  // The moment before a first start (Stopped for a few milliseconds) says nothing.
  if (all.length > 1 && all[0].state === "Stopped" && all[0].to - all[0].from < 500) all.shift();
  for (const piece of all) {
    const t = totals.get(piece.state) || { time: 0, count: 0 };
    t.time += piece.to - piece.from;
    if (piece.entered) t.count += 1;
    totals.set(piece.state, t);
  }
  for (const state of states) {
    const t = totals.get(state);
    if (!t) continue;
    const item = el("span", "");
    item.dataset.state = state;
    item.append(el("i", "swatch b-" + state), state + (t.count > 1 ? " " + t.count + "×" : "") + " " + duration(t.time));
    line.append(item);
  }
  const loop = crashLoop(history, now, span);
  if (loop) {
    const text = "crash loop: " + loop.count + " restarts in " + duration(loop.last - loop.first) + ", " + clock(loop.first) + "–" + clock(loop.last) + (loop.gaveUp ? ", then gave up at " + clock(loop.gaveUp) : "");
    line.append(el("span", "loop", text));
  }
  return line;
}

/**
 * A bar per bucket of the last hour, the newest at the right edge, one layer drawn over the
 * other, with the bucket's numbers on hover.
 */
function bars(points, bucket, layers, ceiling) {
  const width = 600;
  const height = 34;
  const slots = Math.max(1, Math.round(hour / bucket));
  const slot = width / slots;
  const chart = svg("svg", { class: "chart", viewBox: "0 0 " + width + " " + height, preserveAspectRatio: "none", role: "img", "aria-label": "the last hour, a bar per " + duration(bucket) });
  for (const layer of layers) {
    points.slice(-slots).forEach((p, i, shown) => {
      const v = layer.value(p);
      if (v === null || !(v > 0)) return;
      const h = ceiling > 0 ? Math.max(1.5, (Math.min(v, ceiling) / ceiling) * (height - 2)) : 1.5;
      const left = width - (shown.length - i) * slot;
      const rect = svg("rect", { class: layer.className, x: (left + 0.5).toFixed(1), y: (height - h).toFixed(1), width: Math.max(1, slot - 1).toFixed(1), height: h.toFixed(1) });
      const title = svg("title", {});
      title.textContent = printable(clock(p.at) + " · " + layer.label(p));
      rect.append(title);
      chart.append(rect);
    });
  }
  return chart;
}

function figure(kind, caption, value, chart) {
  const fig = el("figure", "");
  fig.dataset.chart = kind;
  const cap = el("figcaption", "");
  cap.append(el("span", "", caption), el("b", "", value));
  fig.append(cap, chart, axis("−1 h", "now"));
  return fig;
}

/** Calls per second, p50 and p99 latency, and the error rate of one toolset over the last hour. */
function charts(points, bucket) {
  points = Array.isArray(points) ? points : [];
  const calls = points.reduce((n, p) => n + p.calls, 0);
  const failures = points.reduce((n, p) => n + p.failures, 0);
  const rate = (p) => (p.seconds > 0 ? p.calls / p.seconds : 0);
  const latest = [...points].reverse().find((p) => p.calls > 0);
  const last = points[points.length - 1];
  const calls1 = (p) => p.calls + " calls, " + number(rate(p)) + "/s";
  const latency = (p) => (p.calls > 0 ? "p50 " + millis(p.p50) + ", p99 " + millis(p.p99) : "no calls");
  const errors = (p) => p.failures + " of " + p.calls + " failed";
  if (calls === 0) return [el("p", "quiet", "no calls in the last hour")];
  return [
    figure("rate", "calls/s", number(last ? rate(last) : 0) + "/s · " + calls + " in 1 h",
      bars(points, bucket, [{ className: "rate", value: rate, label: calls1 }], Math.max(0, ...points.map(rate)))),
    figure("latency", "latency p50 · p99", latest ? millis(latest.p50) + " · " + millis(latest.p99) : "–",
      bars(points, bucket, [
        { className: "p99", value: (p) => p.p99, label: latency },
        { className: "p50", value: (p) => p.p50, label: latency }
      ], Math.max(0, ...points.map((p) => p.p99 || 0)))),
    figure("errors", "errors", number((failures / calls) * 100) + " % · " + failures,
      bars(points, bucket, [{ className: "errors", value: (p) => (p.calls > 0 ? (p.failures / p.calls) * 100 : null), label: errors }], 100))
  ];
}
`
