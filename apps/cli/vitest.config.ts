import { defaultExclude, defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "cli",
    include: ["test/**/*.test.ts"],
    // The soaks, and the tests that need the host alone (no other Toolvisor to sweep their
    // orphans first), run in the soak project (vitest.soak.config.ts), as their own CI step.
    exclude: [...defaultExclude, "test/**/*.soak.test.ts", "test/**/*.alone.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts", "test/bundle.setup.ts"],
    testTimeout: 90_000,
    hookTimeout: 90_000
  }
})
