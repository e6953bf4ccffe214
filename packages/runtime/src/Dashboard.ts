/**
 * The dashboard at `GET /`: one page a person keeps open, in plain HTML, CSS and JS served by the
 * process itself (no build chain, no CDN, no charting library, works offline). A header with the
 * config, the agent, counts by state and uptime; a card per toolset with its restart budget, the
 * buttons its state allows, a state timeline whose legend names a crash loop, and its calls over
 * the last hour; a drawer with its tools, policy, transitions and stderr; the event log, filled
 * with the last hour on load. Times are UTC, as the CLI prints them.
 */
import * as NodeCrypto from "node:crypto"
import { script } from "./internal/dashboardScript.ts"
import { style } from "./internal/dashboardStyle.ts"
import { view } from "./internal/dashboardView.ts"

/** The mark in the header and the tab: a shield around a pulse. */
const mark = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path d="M16 2 4 7v8c0 7.5 5.1 13.3 12 15 6.9-1.7 12-7.5 12-15V7z" fill="#0969da"/><path d="M8 17h4l2-5 4 10 2-5h4" fill="none" stroke="#fff" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round"/></svg>`

/** `GET /favicon.svg`. */
export const favicon = `${mark}\n`

const code = view + script

/** The whole page, one response with its style and script inline. */
export const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Toolvisor</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<style>${style}</style>
</head>
<body>
<header class="top">
  <div class="brand">${mark}<h1>Toolvisor</h1><span id="title"></span></div>
  <div class="meta"><span id="link" class="down">connecting…</span><span id="uptime"></span><span>times in UTC</span></div>
  <div id="counts" class="counts" aria-label="Toolsets by state"></div>
</header>
<main>
  <div class="bar">
    <h2>Toolsets</h2>
    <div class="window" role="group" aria-label="Timeline window">
      <button type="button" data-window="300000">5 min</button><button type="button" data-window="900000">15 min</button><button type="button" data-window="3600000">1 h</button>
    </div>
    <div id="legend" class="legend" aria-label="Legend"></div>
  </div>
  <section id="toolsets"></section>
  <section class="events">
    <h2>Events</h2>
    <ol id="log"></ol>
  </section>
</main>
<aside id="drawer" hidden aria-labelledby="d-name">
  <div class="drawer-head"><h2 id="d-name"></h2><span id="d-state" class="state"></span><button type="button" id="d-close" aria-label="Close">×</button></div>
  <h3>Policy</h3><div id="d-policy"></div>
  <h3>Tools offered <span id="d-tools-count"></span></h3><div id="d-tools" class="tools"></div>
  <h3>Recent transitions</h3><ol id="d-transitions"></ol>
  <h3>Stderr (latest server)</h3><pre id="d-stderr"></pre>
</aside>
<dialog id="confirm">
  <p id="confirm-text"></p>
  <div class="dialog-buttons"><button type="button" id="confirm-cancel">Cancel</button><button type="button" id="confirm-stop" class="danger">Stop</button></div>
</dialog>
<script>${code}</script>
</body>
</html>
`

const sha256 = (text: string) => `'sha256-${NodeCrypto.createHash("sha256").update(text).digest("base64")}'`

/**
 * The page's Content-Security-Policy: its own inline style and script (by the hash of what is
 * served, so no injected markup could run), its icon, requests to this server only, and no
 * framing by any other page.
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  `script-src ${sha256(code)}`,
  `style-src ${sha256(style)}`,
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")
