import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "mcp",
    include: ["test/**/*.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
