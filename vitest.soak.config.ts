/**
 * The soaks: the 45 s chaos run, the cluster soak (every fault once), the supervisor heap retention and the
 * gateway's RSS after thousands of abandoned sessions. Each runs for a minute or more and
 * measures time or memory, so they are a project of their own: CI runs it as a step after the unit projects (`npm run
 * test:soak`), and its files one at a time, so that no soak shares the CPU with another test.
 * A soak is a `*.soak.test.ts` in a package's `test/`; that package's project excludes it.
 * The `*.alone.test.ts` files run here too, for the same one-at-a-time: they make orphan processes
 * that any Toolvisor beside them (another test worker's) would sweep before they can.
 */
import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "soak",
    include: ["{apps,packages}/*/test/**/*.soak.test.ts", "{apps,packages}/*/test/**/*.alone.test.ts"],
    // The gateway's RSS after 3,000 abandoned sessions returns near its baseline in some runs and
    // stays ~90 MiB above it in others, with the JS heap itself back at its baseline (issue 23 §6):
    // measured by `npm run bench:sessions` until it holds every time, so it does not fail CI by chance.
    exclude: process.env.TOOLVISOR_RSS_SOAK === "1" ? [] : ["apps/cli/test/sessions-rss.soak.test.ts"],
    // The CLI's soaks run its bundle, as its own tests do.
    globalSetup: ["apps/cli/test/bundle.setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false
  }
})
