/**
 * A language server is Ready when it answers (issue 26 §6), as a new user meets it: a one-shot
 * `toolvisor call` on bash-language-server, which used to say "No symbols" because Ready came
 * before the server had read its settings and so before it analysed the file it was sent.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { root, runCli, writeConfig } from "./helpers.ts"

const bashServer = NodePath.join(root, "node_modules/.bin/bash-language-server")

describe("toolvisor call on a language server that is still starting", () => {
  it("a one-shot lsp_document_symbols on bash-language-server lists the script's symbols", async () => {
    const workspace = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cli-bash-"))
    NodeFs.writeFileSync(NodePath.join(workspace, "deploy.sh"), '#!/bin/bash\nrelease() { echo "$1"; }\nHOST=prod\n')
    const config = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: lsp",
        "        name: sh",
        `        command: "${bashServer}"`,
        "        args: [start]",
        `        working_dir: "${workspace}"`
      ].join("\n")
    )
    const { code, stdout, stderr } = await runCli(["call", config, "sh_lsp_document_symbols", '{"file":"deploy.sh"}'])
    assert.strictEqual(code, 0, stderr)
    assert.include(stdout, "function release (line 2)")
    assert.include(stdout, "variable HOST (line 3)")
  }, 120_000)
})
