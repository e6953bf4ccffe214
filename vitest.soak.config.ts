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
    // The CLI's soaks run its bundle, as its own tests do.
    globalSetup: ["test/support/tmpdir.setup.ts", "apps/cli/test/bundle.setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false
  }
})
