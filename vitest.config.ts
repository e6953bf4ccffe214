import * as NodeOs from "node:os"
import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    // One test file per core: the files spend most of their time waiting on the servers they
    // start, and Vitest's default (one fewer than the cores) runs them one at a time on 2 cores.
    maxWorkers: NodeOs.availableParallelism()
  }
})
