/**
 * How much of each package's public API is documented: the share of the members of every module
 * its `src/index.ts` re-exports that carry a JSDoc comment (issue 25 §5).
 * Usage: node scripts/doc-coverage.mjs [repo root] [-v: list the undocumented ones]
 *   [--check: fail, listing them, unless every package is at 100%; `npm run lint` runs it so]
 */

import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const root = path.resolve(process.argv.slice(2).find((a) => !a.startsWith("-")) ?? ".")
const pkgs = fs.readdirSync(path.join(root, "packages"))
const config = ts.getParsedCommandLineOfConfigFile(
  path.join(root, "tsconfig.json"),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} }
)
const entries = pkgs.map((p) => path.join(root, "packages", p, "src/index.ts"))
const program = ts.createProgram(entries, { ...config.options, noEmit: true })
const checker = program.getTypeChecker()
const check = process.argv.includes("--check")
const verbose = check || process.argv.includes("-v")
let undocumented = 0
for (const [i, p] of pkgs.entries()) {
  const sf = program.getSourceFile(entries[i])
  const mod = checker.getSymbolAtLocation(sf)
  let total = 0,
    documented = 0
  const missing = []
  for (const ns of checker.getExportsOfModule(mod)) {
    const target = ns.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(ns) : ns
    for (const sym0 of checker.getExportsOfModule(target)) {
      const sym = sym0.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym0) : sym0
      const decls = sym.declarations ?? []
      if (decls.length === 0) continue
      total++
      const has = decls.some((d) => {
        let node = d
        if (ts.isVariableDeclaration(node)) node = node.parent.parent
        return ts.getJSDocCommentsAndTags(node).length > 0
      })
      if (has) documented++
      else missing.push(`${ns.name}.${sym0.name}`)
    }
  }
  console.log(`${p.padEnd(8)} ${documented}/${total} ${total ? ((100 * documented) / total).toFixed(0) : "-"}%`)
  if (verbose) for (const m of missing) console.log("   missing:", m)
  undocumented += missing.length
}
if (check && undocumented > 0) {
  console.error(`${undocumented} public export(s) without a doc comment (listed above)`)
  process.exit(1)
}
