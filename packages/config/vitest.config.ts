import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: { name: "config", include: ["test/**/*.test.ts"], globalSetup: ["../../test/support/tmpdir.setup.ts"] }
})
