import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "repo",
    include: ["*.test.ts"],
    globalSetup: ["support/tmpdir.setup.ts", "../apps/cli/test/bundle.setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
