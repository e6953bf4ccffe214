import { defaultExclude, defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "core",
    include: ["test/**/*.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts"],
    // The soaks, and the tests that need the host alone, run in the soak project
    // (vitest.soak.config.ts), as their own CI step.
    exclude: [...defaultExclude, "test/**/*.soak.test.ts", "test/**/*.alone.test.ts"]
  }
})
