/**
 * The dashboard's style sheet, inlined in the page and allowed by its hash (`Dashboard.ts`). One
 * column of toolset cards that wraps down to a phone's width; light and dark by the system's
 * choice; state colours shared by pills, timelines and the legend.
 */
export const style = `
:root {
  color-scheme: light dark;
  --bg: #f6f8fa; --card: #fff; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --track: #eaeef2;
  --accent: #0969da; --danger: #cf222e;
  --Ready: #2da44e; --Starting: #54aeff; --Degraded: #d4a72c; --Restarting: #a371f7; --Failed: #e5534b; --Stopped: #8c959f;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --card: #161b22; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --track: #21262d; --accent: #4493f8; --danger: #f85149; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
button { font: inherit; color: inherit; cursor: pointer; }
button:disabled { cursor: not-allowed; opacity: .4; }
.muted { color: var(--muted); }
.nowrap { white-space: nowrap; }

header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .4rem 1rem; padding: .8rem 1.2rem;
  background: var(--card); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
.brand { display: flex; align-items: center; gap: .5rem; min-width: 0; }
.brand svg { width: 22px; height: 22px; flex: none; }
h1 { font-size: 1.1rem; margin: 0; }
#title { color: var(--muted); overflow-wrap: anywhere; }
.meta { display: flex; flex-wrap: wrap; gap: .3rem .9rem; align-items: center; font-size: .85rem; color: var(--muted); margin-left: auto; }
#link::before { content: "● "; }
#link.up { color: var(--Ready); } #link.down { color: var(--danger); }
.counts { display: flex; flex-wrap: wrap; gap: .35rem; width: 100%; }
.chip { display: inline-flex; align-items: center; gap: .3rem; padding: .05rem .55rem; border-radius: 999px;
  border: 1px solid var(--line); font-size: .8rem; white-space: nowrap; }
.dot { width: .6rem; height: .6rem; border-radius: 50%; display: inline-block; flex: none; }

main { padding: 1rem 1.2rem 2rem; max-width: 1400px; margin: 0 auto; }
.bar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; margin: 0 0 .6rem; }
h2 { font-size: 1rem; margin: 0; }
.window { display: inline-flex; border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
.window button { border: 0; background: none; padding: .1rem .6rem; font-size: .8rem; }
.window button[aria-pressed="true"] { background: var(--accent); color: #fff; }
.legend { display: flex; flex-wrap: wrap; gap: .2rem .8rem; font-size: .8rem; color: var(--muted); }
.legend span { display: inline-flex; align-items: center; gap: .3rem; white-space: nowrap; }
.swatch { width: .8rem; height: .6rem; border-radius: 2px; display: inline-block; }
.swatch.tick { width: 2px; height: .8rem; background: var(--danger); }

.ts { background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--Stopped);
  border-radius: 8px; padding: .7rem .9rem; margin-bottom: .7rem; min-width: 0; }
.head { display: flex; flex-wrap: wrap; align-items: center; gap: .3rem .7rem; }
.name { font-weight: 600; font-size: 1rem; background: none; border: 0; padding: 0; color: var(--accent);
  overflow-wrap: anywhere; text-align: left; }
.name:hover { text-decoration: underline; }
.kind { white-space: nowrap; font: .75rem ui-monospace, monospace; color: var(--muted); border: 1px solid var(--line);
  border-radius: 4px; padding: 0 .35rem; }
.state { font-weight: 600; white-space: nowrap; }
.facts, .budget { font-size: .85rem; color: var(--muted); }
.budget.spent { color: var(--danger); font-weight: 600; }
.actions { display: flex; gap: .3rem; margin-left: auto; }
.actions button { border: 1px solid var(--line); background: var(--bg); border-radius: 6px; padding: .15rem .65rem; font-size: .85rem; }
.actions button.danger:not(:disabled) { color: var(--danger); }
.error { margin: .4rem 0 0; font-size: .85rem; color: var(--danger); overflow-wrap: anywhere; }

.timeline { margin-top: .55rem; }
.track { position: relative; height: 14px; background: var(--track); border-radius: 3px; overflow: hidden; }
.seg { position: absolute; top: 0; bottom: 0; min-width: 2px; }
.crash { position: absolute; top: 0; height: 5px; width: 2px; background: var(--danger); }
.band { position: absolute; bottom: 0; height: 3px; min-width: 4px; background: var(--danger); }
.axis { display: flex; justify-content: space-between; font-size: .7rem; color: var(--muted); }
.summary { display: flex; flex-wrap: wrap; gap: .15rem .8rem; font-size: .8rem; margin-top: .15rem; }
.summary span { display: inline-flex; align-items: center; gap: .3rem; white-space: nowrap; }
.summary .loop { color: var(--danger); font-weight: 600; white-space: normal; }

.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: .4rem .9rem; margin-top: .55rem; }
figure { margin: 0; min-width: 0; }
.charts .quiet { margin: 0; font-size: .8rem; color: var(--muted); }
figcaption { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .4rem; font-size: .75rem; color: var(--muted); }
figcaption b { color: var(--fg); font-weight: 600; white-space: nowrap; }
.chart { display: block; width: 100%; height: 34px; background: var(--track); border-radius: 3px; }
.chart .rate { fill: var(--accent); } .chart .p99 { fill: var(--Degraded); } .chart .p50 { fill: var(--Ready); }
.chart .errors { fill: var(--danger); }

.s-Ready { color: var(--Ready); } .s-Starting { color: var(--Starting); } .s-Degraded { color: var(--Degraded); }
.s-Restarting { color: var(--Restarting); } .s-Failed { color: var(--Failed); } .s-Stopped { color: var(--Stopped); }
.b-Ready { background: var(--Ready); } .b-Starting { background: var(--Starting); } .b-Degraded { background: var(--Degraded); }
.b-Restarting { background: var(--Restarting); } .b-Failed { background: var(--Failed); } .b-Stopped { background: var(--Stopped); }
.ts[data-state="Ready"] { border-left-color: var(--Ready); } .ts[data-state="Starting"] { border-left-color: var(--Starting); }
.ts[data-state="Degraded"] { border-left-color: var(--Degraded); } .ts[data-state="Restarting"] { border-left-color: var(--Restarting); }
.ts[data-state="Failed"] { border-left-color: var(--Failed); } .ts[data-state="Stopped"] { border-left-color: var(--Stopped); }

.events { margin-top: 1.2rem; }
#log { list-style: none; padding: 0; margin: .5rem 0 0; font: 12px/1.6 ui-monospace, monospace; max-height: 22rem; overflow: auto;
  background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
#log li { padding: .1rem .7rem; border-bottom: 1px solid var(--track); overflow-wrap: anywhere; }
#log time { color: var(--muted); margin-right: .6rem; }
#log .bad { color: var(--danger); } #log .quiet { color: var(--muted); }

#drawer { position: fixed; top: 0; right: 0; bottom: 0; width: min(460px, 100vw); background: var(--card); z-index: 3;
  border-left: 1px solid var(--line); box-shadow: -8px 0 24px #0003; overflow: auto; padding: 1rem 1.1rem; }
#drawer[hidden] { display: none; }
.drawer-head { display: flex; align-items: center; gap: .6rem; }
.drawer-head h2 { overflow-wrap: anywhere; }
.drawer-head button { margin-left: auto; border: 1px solid var(--line); background: none; border-radius: 6px; font-size: 1rem; }
#drawer h3 { font-size: .85rem; margin: 1rem 0 .35rem; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
#drawer dl { display: grid; grid-template-columns: auto 1fr; gap: .15rem .8rem; margin: 0; font-size: .85rem; }
#drawer dt { color: var(--muted); } #drawer dd { margin: 0; overflow-wrap: anywhere; }
#d-tools-count { text-transform: none; letter-spacing: 0; }
.tools { display: flex; flex-wrap: wrap; gap: .3rem; }
.tools span { font: .75rem ui-monospace, monospace; border: 1px solid var(--line); border-radius: 4px; padding: 0 .35rem; overflow-wrap: anywhere; }
#d-transitions { list-style: none; padding: 0; margin: 0; font-size: .8rem; }
#d-transitions li { padding: .2rem 0; border-bottom: 1px solid var(--track); overflow-wrap: anywhere; }
#d-transitions time { color: var(--muted); margin-right: .4rem; font-family: ui-monospace, monospace; }
#d-transitions .why { display: block; color: var(--danger); }
#d-stderr { font: 11px/1.5 ui-monospace, monospace; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .5rem; margin: 0; max-height: 16rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }

dialog { border: 1px solid var(--line); border-radius: 10px; background: var(--card); color: var(--fg); max-width: min(420px, 92vw); padding: 1.1rem; }
dialog::backdrop { background: #0006; }
dialog p { margin: 0 0 1rem; }
.dialog-buttons { display: flex; justify-content: flex-end; gap: .5rem; }
.dialog-buttons button { border: 1px solid var(--line); background: var(--bg); border-radius: 6px; padding: .3rem .9rem; }
.dialog-buttons .danger { background: var(--danger); border-color: var(--danger); color: #fff; }

@media (max-width: 560px) {
  header.top, main { padding-left: .7rem; padding-right: .7rem; }
  .actions { margin-left: 0; width: 100%; }
  .actions button { flex: 1; }
}
`
