/**
 * Secrets written into a config itself, which no `${VAR}` announces, are collected with the ones
 * from the environment, so every output masks them too.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { agentYaml, parse, toolset } from "./helpers.ts"

describe("secrets written into the file", () => {
  it.effect("args after secret flags, --flag=value, env and header values, URL path and query, a client secret", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml(`      - type: mcp
        name: local
        command: server
        args: ["--api-key", "lit-apikey-1", "--token=lit-token-2", "--port", "8080", "--root", "/srv/data"]
        env: { GITHUB_TOKEN: "lit-env-3", LOG_LEVEL: "debug" }
      - type: mcp
        name: remote
        remote:
          url: https://mcp.example.com/v1/LitPathToken5abcdefGHIJ/sse?api_key=lit-query-6&page=2
          headers: { X-Api-Key: lit-header-7, Accept: application/json }
          oauth: { clientId: app, clientSecret: lit-client-8 }
`)
      )
      const local = toolset(config, "mcp/local")
      assert.includeMembers([...local.secrets], ["lit-apikey-1", "lit-token-2", "lit-env-3"])
      for (const plain of ["8080", "/srv/data", "debug", "server"]) assert.notInclude(local.secrets, plain)
      const remote = toolset(config, "mcp/remote")
      assert.includeMembers(
        [...remote.secrets],
        ["LitPathToken5abcdefGHIJ", "lit-query-6", "lit-header-7", "lit-client-8"]
      )
      for (const plain of ["application/json", "2", "sse"]) assert.notInclude(remote.secrets, plain)
    })
  )
})
