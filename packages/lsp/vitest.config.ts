import { defineProject } from "vitest/config"

export default defineProject({
  resolve: { conditions: ["@toolvisor/source"] },
  ssr: { resolve: { conditions: ["@toolvisor/source"] } },
  test: {
    name: "lsp",
    include: ["test/**/*.test.ts"],
    globalSetup: ["../../test/support/tmpdir.setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One test file at a time: typescript-language-server is four processes and ~470 MB and takes
    // 2–3 s to its first diagnostics alone; several loading projects at once on a 2-core machine
    // push those past the 10 s that lsp_diagnostics waits for them.
    fileParallelism: false
  }
})
