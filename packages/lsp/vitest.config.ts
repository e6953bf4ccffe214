import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: { name: "lsp", include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 }
})
