import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "cluster",
    include: ["test/**/*.test.ts"],
    exclude: ["test/**/*.soak.test.ts"],
    // The runners and CLI clients the tests start run the CLI's bundle, rebuilt when stale.
    globalSetup: ["../../test/support/tmpdir.setup.ts", "../../apps/cli/test/bundle.setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
