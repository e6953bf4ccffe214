import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "ai",
    include: ["test/**/*.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts"],
    testTimeout: 90_000,
    hookTimeout: 90_000
  }
})
