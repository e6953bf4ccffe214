import { defaultExclude, defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "runtime",
    include: ["test/**/*.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts"],
    // The tests that need the host alone run in the soak project (vitest.soak.config.ts).
    exclude: [...defaultExclude, "test/**/*.alone.test.ts"],
    testTimeout: 90_000,
    hookTimeout: 90_000
  }
})
