/**
 * The published CLI as one bundle (rolldown): the workspace packages from their TypeScript
 * sources and every dependency inlined, so an install is one package and a start reads a few
 * files. Each command's module is its own chunk, loaded when the command runs, so `--version`
 * loads only effect/cli, and the cluster (with its SQL driver) loads only for `--cluster`.
 */
import * as NodePath from "node:path"
import { type BuildOptions, defineConfig } from "rolldown"

export const options: BuildOptions = {
  input: { main: NodePath.join(import.meta.dirname, "src/main.ts") },
  platform: "node",
  // The `@toolvisor/source` condition points workspace packages at their sources.
  // Packages without `exports` (jsonc-parser) ship a UMD `main` whose dynamic requires cannot be
  // bundled: their ES module build (`module`) is taken first.
  resolve: { conditionNames: ["@toolvisor/source", "import", "node", "default"], mainFields: ["module", "main"] },
  // pg's native binding is optional and absent; pg falls back to JavaScript without it.
  external: ["pg-native"],
  output: {
    dir: NodePath.join(import.meta.dirname, "bundle"),
    cleanDir: true,
    format: "esm",
    minify: true,
    sourcemap: true,
    chunkFileNames: "[name]-[hash].js"
  }
}

export default defineConfig(options)
